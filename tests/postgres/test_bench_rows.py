"""The PostgreSQL rows of ``make bench`` (``bench/pg.py``'s ``rows``), in their quick form."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import pg

KEYS = {"row", "floor", "tierlog", "unit", "ratio", "target", "met"}


@pytest.mark.slow
class TestRows:
    def test_quick_rows_have_the_table_shape(self, pg_url: str, tmp_path: Path) -> None:
        """Bulk, ship, NORMAL commits and 1 -> 4 shippers, each with a measured floor and
        ratio, and the shippers' row with its curve as a series."""
        rows = pg.rows(tmp_path, quick=True)
        assert [row["row"].split(" ")[1] for row in rows] == ["bulk:", "ship", "NORMAL", "1"]
        for row in rows:
            assert set(row) >= KEYS
            assert row["floor"] > 0
            assert row["tierlog"] > 0
            assert row["met"] == (row["ratio"] >= float(row["target"].split()[1][:-1]))
        assert [x for x, _ in rows[-1]["series"]["points"]] == [1, 4]
