"""bench/startup.py in quick mode: four rows in the shape bench/run.py tabulates."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import startup

KEYS = {"row", "floor", "tierlog", "unit", "ratio", "target", "met"}


class TestStartup:
    def test_quick_rows_time_each_command_against_bare_python(self, tmp_path: Path) -> None:
        """Each row has the same floor (bare Python) and a command that ran: the journal
        the open row opened exists, and each met says whether its budget held."""
        rows = startup.rows(tmp_path, quick=True)
        assert [r["row"] for r in rows] == [name for name, _ in startup.ROWS.values()]
        assert len({r["floor"] for r in rows}) == 1
        for row, (_, budget) in zip(rows, startup.ROWS.values(), strict=True):
            assert set(row) == KEYS
            assert row["unit"] == "ms"
            assert row["ratio"] == pytest.approx(row["floor"] / row["tierlog"], rel=1e-2)
            assert row["met"] == (row["tierlog"] - row["floor"] <= budget)
        assert (tmp_path / "startup.db").exists()

    def test_a_failing_command_is_an_error_not_a_time(self) -> None:
        """A command that exits non-zero or writes to standard error is not timed."""
        with pytest.raises(RuntimeError, match="exit 1"):
            startup.once(["python3", "-c", "import sys; sys.exit(1)"], "")
        with pytest.raises(RuntimeError, match="noise"):
            startup.once(["python3", "-c", "import sys; print('noise', file=sys.stderr)"], "")
