"""The benchmark scripts' own claims: each measures real work against floors that ran.

``bench/run.py``'s run is driven here at smoke sizes (the eventsourcing peer and the
PostgreSQL rows replaced by their "skipped" lines: they have their own runs); the
test reads the files it wrote, not its timings. ``bench/ceiling.py``'s bare loop does
the work a checked commit does (the journal it writes verifies, turn for turn).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import eventstore
from bench import ceiling, run
from eventstore._ops._audit import verify

BIG, MID, REPS = 2_000, 1_000, 1
PER_COMMIT = {"commit_normal": ("NORMAL", 500), "commit_full": ("FULL", 200)}
RATED = ("commit_normal", "commit_full", "bulk", "replay_1k", "replay_2k", "verify")
PEER, PG = "eventsourcing: skipped in the smoke test", "PostgreSQL: skipped in the smoke test"


@attrs.frozen
class Smoke:
    """One smoke run of ``bench/run.py``: its folder of journals and floors, its rows."""

    tmp: Path
    results: dict[str, Any]
    table: str


@pytest.fixture(name="smoke", scope="module")
def _smoke(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Smoke]:
    tmp = tmp_path_factory.mktemp("bench")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run, "peer", lambda *_: PEER)
        patch.setattr("bench.pg.run_pg", lambda **_: PG)
        results = run.run_all(tmp, BIG, MID, REPS)
        yield Smoke(tmp=tmp, results=results, table=run.render(results))


def _count(db: Path) -> int:
    """Rows in a floor file's events table, read with plain sqlite3."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        conn.close()


def _version(db: Path) -> int:
    with eventstore.open(db, readonly=True) as journal:
        return journal.session("s").version


class TestRun:
    def test_it_writes_every_row(self, smoke: Smoke) -> None:
        """results.json holds one row per path, the peer's and PostgreSQL's included."""
        assert set(smoke.results) == {
            *RATED,
            "history",
            "reopen_append",
            "replay_memory",
            "peer_eventsourcing",
            "postgres",
        }

    def test_each_rated_row_has_tierlog_floor_and_ratio(self, smoke: Smoke) -> None:
        """A rated row names tierlog's rate, its floor's and their ratio, which agree."""
        for name in RATED:
            row = smoke.results[name]
            assert {"tierlog", "floor", "ratio", "unit"} <= set(row), name
            assert row["ratio"] == pytest.approx(row["tierlog"] / row["floor"], rel=0.01)
        for name in PER_COMMIT:
            assert "schema_floor" in smoke.results[name]

    def test_the_journals_it_wrote_verify(self, smoke: Smoke) -> None:
        """Every tierlog journal of the run passes verify: it timed real, checked work."""
        journals = [p for p in smoke.tmp.glob("*.db") if not p.name.startswith(("floor", "schema"))]
        assert {p.stem for p in journals} >= {"commit-NORMAL", "commit-FULL", "big", "mid"}
        for path in journals:
            with eventstore.open(path, readonly=True) as journal:
                assert journal.sessions() == ["s"], path.name
                assert verify(journal, ["s"]) == [], path.name

    def test_the_journals_hold_what_was_timed(self, smoke: Smoke) -> None:
        """One event per timed commit; the replay and reopen rows count the events read."""
        for name, (sync, n) in PER_COMMIT.items():
            assert _version(smoke.tmp / f"commit-{sync}.db") == 1 + n * REPS, name
        assert _version(smoke.tmp / "bulk-0.db") == 1 + MID
        assert smoke.results["reopen_append"]["events"] == BIG
        assert smoke.results["replay_memory"]["events"] == _version(smoke.tmp / "big.db")

    def test_the_floors_ran(self, smoke: Smoke) -> None:
        """Each floor file holds the rows its loop inserted, on the plain and the schema DDL."""
        for sync, n in PER_COMMIT.values():
            assert _count(smoke.tmp / f"floor-commit-{sync}.db") == n * REPS
            assert _count(smoke.tmp / f"schema-commit-{sync}.db") == n * REPS
        for ddl in ("p", "s"):
            assert _count(smoke.tmp / f"floor-bulk-{ddl}-0.db") == MID

    def test_the_table_names_every_row_and_target(self, smoke: Smoke) -> None:
        """The printed table has a line per rated row, with its target and ok or MISS."""
        lines = {line.split()[0]: line for line in smoke.table.splitlines() if line.strip()}
        for name in RATED:
            target = run.TARGETS.get(name)
            if target is not None:
                met = smoke.results[name]["ratio"] >= target
                assert f">= {target} {'ok' if met else 'MISS'}" in lines[name], name
        for name, key in (("history", "history"), ("reopen+append", "reopen_append")):
            assert f"(target {smoke.results[key]['target']})" in lines[name]
        assert "(target <= 100 MB)" in lines["replay"]
        assert PEER in smoke.table
        assert PG in smoke.table


class TestCeiling:
    def test_the_bare_loop_writes_a_journal_that_verifies(self, tmp_path: Path) -> None:
        """Its rows link, its payloads are canonical and its state re-derives: the ceiling
        is measured on real work, not a shortcut; the floor inserted a row a commit."""
        ceiling.per_commit(tmp_path, 40, 2)
        assert _count(tmp_path / "floor.db") == 80
        with eventstore.open(tmp_path / "bare.db", readonly=True) as journal:
            assert verify(journal, ["s"]) == []
            assert journal.session("s").state.turns == 80
        with eventstore.open(tmp_path / "live.db", readonly=True) as journal:
            assert journal.session("s").state.turns == 80

    def test_the_bulk_parts_are_each_timed(self, tmp_path: Path) -> None:
        """Each step of a bulk extend gets its own line, in the order a batch runs them;
        both floors inserted the whole batch, and so did extend."""
        parts = ceiling.bulk(tmp_path, 500, 1)
        assert list(parts) == [
            "plain floor", "schema floor", "validate and fold", "encode and hash", "extend"
        ]  # fmt: skip
        assert [_count(tmp_path / f"bulk-{i}.db") for i in (0, 1)] == [500, 500]
        assert _version(tmp_path / "x2.db") == 501
