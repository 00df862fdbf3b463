"""bench/ingest_rows.py in quick mode: the rows issue 26's table takes, in its shape."""

from __future__ import annotations

from pathlib import Path

import eventstore
from bench import ingest_rows

KEYS = {"row", "floor", "tierlog", "unit", "ratio", "target", "met"}


class TestIngestRows:
    def test_quick_rows_have_the_table_shape(self, tmp_path: Path) -> None:
        """Two rows (1% growth vs full, unchanged vs cold start) with every key, in ms; the
        growth row carries a series of re-ingest cost against a growing log length."""
        growth, same = ingest_rows.rows(tmp_path, quick=True)
        for row in (growth, same):
            assert set(row) >= KEYS
            assert row["unit"] == "ms"
            assert row["floor"] > 0
            assert row["tierlog"] > 0
            assert row["ratio"] == row["floor"] / row["tierlog"]
            assert isinstance(row["met"], bool)
        assert "growth" in growth["row"]
        assert "unchanged" in same["row"]
        xs = [x for x, _ in growth["series"]["points"]]
        assert len(xs) == 2
        assert xs == sorted(xs)
        assert xs[0] < xs[1]
        assert growth["series"]["x"] == "log length"

    def test_the_grown_journal_holds_the_new_part(self, tmp_path: Path) -> None:
        """The journal the growth row starts from lacks the last lines, which the timed
        re-ingest then appends."""
        path, cut = ingest_rows.transcript(tmp_path, 0.1)
        assert 0 < cut < path.stat().st_size
        db = ingest_rows._journal(tmp_path, path, cut)
        with eventstore.open(db) as journal:
            result = eventstore.ingest(journal, path, reviews=False)
        assert result.appended_after is not None

    def test_a_transcript_of_a_size_asked_again_starts_afresh(self, tmp_path: Path) -> None:
        """Asked twice for one size, the transcript is written anew, not appended to (a
        second chain would make the grown journal read whole)."""
        first, _ = ingest_rows.transcript(tmp_path, 0.05)
        size = first.stat().st_size
        again, _ = ingest_rows.transcript(tmp_path, 0.05)
        assert again.stat().st_size == size
