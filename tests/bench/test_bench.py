"""The benchmark table's own claims: every row measures real work against a floor that ran.

``bench/run.py``'s modules run here in quick mode (the eventsourcing peer has no
quick rows); the tests read the rows and the files they wrote, not their timings.
``bench/ceiling.py``'s bare loop does the work a checked commit does (the journal
it writes verifies, turn for turn). The table and the chart are checked on rows
given by hand.
"""

from __future__ import annotations

import importlib
import sqlite3
import sys
import types
from pathlib import Path
from typing import Any

import attrs
import pytest

import eventstore
from bench import ceiling, chart, run
from eventstore._ops._audit import verify

ROWS = (  # issue 26's targets that the core and steady modules own, in the table's order
    "append_turn NORMAL / bare steps",
    "append_turn FULL / bare steps",
    "append_turn FULL / raw floor",
    "bulk extend / raw floor",
    "replay / orjson floor",
    "replay / checked floor",
    "verify one session / floor",
    "verify --jobs 2 / --jobs 1",
    "commit at 2,000 events / at 200",
    "reopen + append, 2,200 events",
)


@attrs.frozen
class Quick:
    """One quick run of the table's modules: the folder they wrote, their rows."""

    tmp: Path
    rows: list[dict[str, Any]]


@pytest.fixture(name="quick", scope="module")
def _quick(tmp_path_factory: pytest.TempPathFactory) -> Quick:
    tmp = tmp_path_factory.mktemp("bench")
    return Quick(tmp=tmp, rows=run.collect(tmp, True, ["bench.core", "bench.steady"]))


def _count(db: Path) -> int:
    """Rows in a file's events table, read with plain sqlite3."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        conn.close()


def _row(name: str, ratio: float, *, met: bool, series: list[list[float]] | None = None) -> Any:
    out = {"row": name, "floor": 2.0, "tierlog": 1.0, "unit": "ms", "ratio": ratio}
    out |= {"target": ">= 1.0x", "met": met}
    if series:
        out["series"] = {"label": name, "x": "log length", "points": series}
    return out


class TestRows:
    def test_every_target_has_a_row_in_order(self, quick: Quick) -> None:
        """The core and steady modules give issue 26's rows, then replay memory."""
        names = [r["row"] for r in quick.rows]
        assert names[: len(ROWS)] == list(ROWS)
        assert names[len(ROWS)].startswith("replay memory")

    def test_ratios_and_verdicts_agree_with_the_values(self, quick: Quick) -> None:
        """A rate's ratio is tierlog/floor, a time's floor/tierlog; met follows the target."""
        for r in quick.rows:
            if r["floor"] is None:  # an absolute bound: ratio is bound / value
                continue
            rate = r["unit"].endswith("/s")
            expected = r["tierlog"] / r["floor"] if rate else r["floor"] / r["tierlog"]
            assert r["ratio"] == pytest.approx(expected, rel=0.02), r["row"]
            if r["target"].startswith(">= "):
                assert r["met"] == (r["ratio"] >= float(r["target"][3:-1])), r["row"]

    def test_the_commit_series_runs_along_the_log(self, quick: Quick) -> None:
        """The history row carries its cost at each log length, for the chart."""
        (history,) = [r for r in quick.rows if "series" in r]
        assert [x for x, _ in history["series"]["points"]] == [200, 1_000, 2_000]
        assert all(y > 0 for _, y in history["series"]["points"])

    def test_the_journals_it_timed_verify(self, quick: Quick) -> None:
        """Every tierlog journal of the run passes verify: it timed real, checked work."""
        journals = [p for p in quick.tmp.rglob("*.db") if not p.name.startswith(("floor", "es-"))]
        assert {p.stem for p in journals} >= {"live", "bare", "live-full", "mid", "jobs"}
        for path in journals:
            with eventstore.open(path, readonly=True) as journal:
                assert verify(journal) == [], path

    def test_the_floors_ran(self, quick: Quick) -> None:
        """The commit floors inserted a row a commit, the bulk floor its whole batch."""
        core = quick.tmp / "core"
        assert _count(core / "floor.db") == 100 * 3
        assert _count(core / "floor-full.db") == 50 * 3
        assert {_count(p) for p in core.glob("floor-bulk-*.db")} == {2_000}


class TestTable:
    def test_every_module_gives_rows(self) -> None:
        """Each module the table names has ``rows(tmp, quick)``."""
        for name in run.MODULES:
            assert callable(importlib.import_module(name).rows), name

    def test_each_row_is_printed_with_its_verdict(self) -> None:
        """One line a row, with its target and ok or MISSED, and the count met."""
        table = run.render([_row("fast", 2.0, met=True), _row("slow", 0.5, met=False)])
        lines = table.splitlines()
        assert lines[1].split()[0] == "fast"
        assert lines[1].endswith(" ok")
        assert lines[2].split()[0] == "slow"
        assert lines[2].endswith(" MISSED")
        assert lines[-1] == "1 of 2 targets met"

    def test_another_module_adds_its_rows(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A module named in the list is asked for its rows with a folder of its own."""
        module = types.ModuleType("bench_other")
        seen: list[Path] = []

        def rows(tmp: Path, quick: bool) -> list[dict[str, Any]]:
            seen.append(tmp)
            return [_row("other", 1.0, met=True)]

        module.rows = rows  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "bench_other", module)
        assert [r["row"] for r in run.collect(tmp_path, True, ["bench_other"])] == ["other"]
        assert seen == [tmp_path / "bench_other"]

    def test_a_row_without_the_tables_keys_is_refused(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A module's row that lacks a key stops the run, naming what is missing."""
        module = types.ModuleType("bench_bad")
        module.rows = lambda tmp, quick: [{"row": "x"}]  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "bench_bad", module)
        with pytest.raises(ValueError, match="lacks"):
            run.collect(tmp_path, True, ["bench_bad"])

    def test_reference_writes_the_table_between_the_markers(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--reference replaces the README's table block and writes the chart."""
        readme, svg = tmp_path / "README.md", tmp_path / "cost.svg"
        readme.write_text(f"before\n{run.MARKERS[0]}\nold\n{run.MARKERS[1]}\nafter\n")
        monkeypatch.setattr(run, "README", readme)
        monkeypatch.setattr(run, "CHART", svg)
        rows = [_row("fast", 2.0, met=True, series=[[10, 1.0], [100, 1.0]])]
        run.reference(run.render(rows), run.meta(True), rows)
        text = readme.read_text()
        assert text.startswith("before\n")
        assert text.endswith(f"{run.MARKERS[1]}\nafter\n")
        assert "fast" in text
        assert "old" not in text
        assert svg.read_text().count("<polyline") == 1


class TestChart:
    def test_a_flat_series_is_drawn_flat(self) -> None:
        """Every point of a series of equal costs sits at the same height (1.0)."""
        drawn = chart.svg([_row("flat", 1.0, met=True, series=[[10, 5.0], [100, 5.0]])])
        points = drawn.split('points="')[1].split('"')[0].split()
        assert len({p.split(",")[1] for p in points}) == 1

    def test_rows_without_series_draw_no_line(self) -> None:
        """No series, no polyline: the chart is still a valid, empty SVG."""
        drawn = chart.svg([_row("plain", 1.0, met=True)])
        assert drawn.startswith("<svg")
        assert "<polyline" not in drawn


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

    def test_the_stubbed_loops_time_python_and_write_nothing(self, tmp_path: Path) -> None:
        """With SQLite stubbed out both loops are timed (CPU µs a commit) and the
        journal they ran on holds only its session's start: no statement reached it."""
        stubbed = ceiling.python_only(tmp_path, 20, 2)
        assert list(stubbed) == ["append_turn", "its steps"]
        assert all(0 < us < 10_000 for us in stubbed.values())
        assert _version(tmp_path / "stubbed.db") == 1

    def test_the_bulk_parts_are_each_timed(self, tmp_path: Path) -> None:
        """Each step of a bulk extend gets its own line, in the order a batch runs them;
        both floors inserted the whole batch, and so did extend."""
        parts = ceiling.bulk(tmp_path, 500, 1)
        assert list(parts) == [
            "plain floor", "schema floor", "validate and fold", "encode and hash", "extend"
        ]  # fmt: skip
        assert [_count(tmp_path / f"bulk-{i}.db") for i in (0, 1)] == [500, 500]
        assert _version(tmp_path / "x2.db") == 501


def _version(db: Path) -> int:
    with eventstore.open(db, readonly=True) as journal:
        return journal.session("s").version
