"""The fleet run (``make fleet``, ``bench/fleet.py``), a bounded slice: journals of
several hosts shipped by concurrent OS processes into one cluster, then audited."""

from __future__ import annotations

from pathlib import Path

import pytest

import eventstore
from bench import fleet
from eventstore._ops._audit import verify
from tests import pgcluster

SHAPE = fleet.Shape(journals=3, sessions=2, events=120)


@pytest.fixture(name="cluster")
def _cluster(pg_url: str, pg_cluster: pgcluster.Cluster) -> pgcluster.Cluster:
    return pg_cluster  # pg_url: skips without a cluster


@pytest.mark.slow
class TestFleet:
    def test_concurrent_shippers_carry_every_journal_whole(
        self, cluster: pgcluster.Cluster, tmp_path: Path
    ) -> None:
        """Two shipper processes carry three hosts' journals: every session arrives at
        its source's head, the destination verifies, and the audit lists each session."""
        journals = fleet.make_journals(tmp_path, SHAPE)
        url = cluster.create_database("fleet")
        shipped = fleet.ship_fleet(url, journals, 2)
        assert shipped.seconds > 0
        assert shipped.cpu > 0
        with eventstore.open(url, readonly=True) as dest:
            for path in journals:
                with eventstore.open(str(path), readonly=True) as src:
                    for sid in src.sessions():
                        assert dest.recorder.head(sid) == src.recorder.head(sid)
            assert [f for f in verify(dest) if f.fatal] == []
        rows, _ = fleet.audit(url)
        assert rows == SHAPE.journals * SHAPE.sessions

    def test_the_run_reports_a_curve_and_the_audit(
        self, cluster: pgcluster.Cluster, tmp_path: Path
    ) -> None:
        """A run over 1 and 2 shippers gives a rate for each, CPU per event, and the
        audit's count of sessions, and its report prints them."""
        result = fleet.run(cluster, tmp_path, SHAPE, (1, 2), reps=1)
        assert set(result.rates) == {1, 2}
        assert min(result.rates.values()) > 0
        assert result.audit_rows == SHAPE.journals * SHAPE.sessions
        text = "\n".join(fleet.report(result))
        assert f"{SHAPE.total:,} events" in text
        assert "cross-session audit: 6 sessions" in text
