"""Twelve OS processes writing one PostgreSQL journal: a bounded slice of ``make soak``."""

from __future__ import annotations

import pytest

from tests.pg_soak import soak


@pytest.mark.slow
class TestSoak:
    def test_parallel_and_racing_writers_keep_every_chain(self, pg_url: str) -> None:
        """8 writers on 8 sessions and 4 racing on one, for a few seconds: versions are
        dense, every committed turn is there once, chains verify, the racers collided."""
        result = soak(pg_url, seconds=3.0)
        assert result.problems == ()
        assert result.own_commits > 0
        assert result.shared_commits > 0
        assert result.conflicts > 0, "the racers never collided"
