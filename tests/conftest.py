"""Fixtures: real journal files in a temporary folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import eventstore

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("long" if os.environ.get("TIERLOG_CAMPAIGN") == "long" else "default")


@pytest.fixture(name="db_path")
def _db_path(tmp_path: Path) -> Path:
    return tmp_path / "agent.db"


@pytest.fixture(name="journal")
def _journal(db_path: Path) -> Iterator[eventstore.Journal]:
    journal = eventstore.open(db_path)
    yield journal
    journal.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the kill -9 campaign's counts when it ran."""
    from tests.test_crash import TALLY

    if TALLY:
        counts = ", ".join(f"{name}: {n}" for name, n in sorted(TALLY.items()))
        terminalreporter.write_line(f"kill -9 campaign: {counts}")
