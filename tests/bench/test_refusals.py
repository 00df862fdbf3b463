"""bench/refusals.py in quick mode: one row in the shape bench/run.py tabulates."""

from __future__ import annotations

from pathlib import Path

import pytest

import eventstore
from bench import refusals
from eventstore._ops._audit import verify

KEYS = {"row", "floor", "tierlog", "unit", "ratio", "target", "met", "series"}


class TestRefusals:
    def test_quick_row_compares_two_refusals_of_one_session(self, tmp_path: Path) -> None:
        """The row times the 60th refusal against the 10th, its series walks the log's
        length upwards, and the journal it wrote holds one spill per refusal and verifies."""
        (row,) = refusals.rows(tmp_path, quick=True)
        assert set(row) == KEYS
        assert row["unit"] == "ms"
        assert row["floor"] > 0
        assert row["tierlog"] > 0
        assert row["ratio"] == pytest.approx(row["floor"] / row["tierlog"], rel=1e-3)
        assert row["met"] == (row["tierlog"] <= refusals.RATIO * row["floor"])
        xs = [x for x, _ in row["series"]["points"]]
        assert xs == sorted(xs)
        assert len(xs) >= 3
        with eventstore.open(tmp_path / "refusals-0.db") as journal:
            state = journal.session("bench").state
            assert len(state.spills) == refusals.QUICK_LAST + refusals.WINDOW
            assert verify(journal) == []

    def test_the_nth_is_the_median_around_it(self) -> None:
        """The 10th refusal's cost is the median of the 5th to the 14th."""
        times = [float(t) for t in range(100)]
        assert refusals.at(times, 10) == 9.5
        assert refusals.at(times, 2) == 4.5
