"""Fixtures: real journal files in a temporary folder, and a throwaway PostgreSQL
cluster for the tests that run on both backends."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import eventstore
from tests import pgcluster
from tests.helpers import real_part_missing
from tests.targets import PostgresTarget, SqliteTarget, Target

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("long" if os.environ.get("TIERLOG_CAMPAIGN") == "long" else "default")


@pytest.fixture(name="pg_cluster", scope="session")
def _pg_cluster() -> Iterator[pgcluster.Cluster | None]:
    """One throwaway cluster for the whole run, if this machine can start one."""
    if pgcluster.missing() is not None:
        yield None
        return
    cluster = pgcluster.Cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(name="restartable", scope="session")
def _restartable() -> Iterator[pgcluster.Cluster]:
    """A second throwaway cluster, for the tests that restart it under a journal:
    restarting it cuts no other test's connection."""
    if pgcluster.missing() is not None:
        pytest.skip(f"no PostgreSQL: {pgcluster.missing()}")
    cluster = pgcluster.Cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(name="pg_url")
def _pg_url(pg_cluster: pgcluster.Cluster | None) -> str:
    """A fresh, empty schema of the throwaway cluster, as a URL (skips without one)."""
    if pg_cluster is None:
        real_part_missing(f"no PostgreSQL: {pgcluster.missing()}", "TIERLOG_REQUIRE_POSTGRES")
    return pg_cluster.create_schema()


@pytest.fixture(name="db_path")
def _db_path(tmp_path: Path) -> Path:
    return tmp_path / "agent.db"


@pytest.fixture(name="backend", autouse=True)
def _backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` unless a test is parametrized over ``BACKENDS`` (``on_both``); used by
    every test, so a module can parametrize all of its tests at once."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture(name="target")
def _target(backend: str, db_path: Path, request: pytest.FixtureRequest) -> Target:
    """Where the test's journal lives, and a side door to it for checks and tampering."""
    if backend == "sqlite":
        return SqliteTarget(db_path)
    return PostgresTarget(request.getfixturevalue("pg_url"))


@pytest.fixture(name="second_target")
def _second_target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Target:
    """Another, empty journal location on the same backend as ``target``."""
    if backend == "sqlite":
        (tmp_path / "second").mkdir()
        return SqliteTarget(tmp_path / "second" / "agent.db")
    request.getfixturevalue("pg_url")  # skips without a cluster
    cluster: pgcluster.Cluster = request.getfixturevalue("pg_cluster")
    return PostgresTarget(cluster.create_schema())


@pytest.fixture(name="journal")
def _journal(target: Target) -> Iterator[eventstore.Journal]:
    journal = eventstore.open(target.location)
    yield journal
    journal.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the kill -9 campaign's counts, and the reliability campaign's, when they ran."""
    from tests.shell.test_crash import TALLY
    from tests.test_campaign import TALLY as RELIABILITY

    for title, tally in (("kill -9 campaign", TALLY), ("reliability campaign", RELIABILITY)):
        if tally:
            counts = ", ".join(f"{name}: {n}" for name, n in sorted(tally.items()))
            terminalreporter.write_line(f"{title}: {counts}")
