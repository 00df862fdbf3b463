"""Long batches go to PostgreSQL through a binary COPY: what they store is what
SQLite stores, byte for byte."""

from __future__ import annotations

from pathlib import Path

import eventstore
import reducers as r
from eventstore._ops._audit import verify
from eventstore._postgres._recorder import COPY_MIN
from tests.helpers import config

AWKWARD = ("back\\slash", "tab\there", "new\nline", "carriage\rreturn", "é ✓ 𝄞", "nul\x00byte")


def _turns(n: int) -> list[r.Event]:
    return [
        r.TurnAppended(index=i, role="tool", content=f"{AWKWARD[i % len(AWKWARD)]} {i}", tokens=3)
        for i in range(n)
    ]


class TestCopiedBatches:
    def test_a_long_batch_stores_what_sqlite_stores(self, pg_url: str, tmp_path: Path) -> None:
        """A batch past COPY_MIN with backslashes, tabs, newlines, astral characters and
        a NUL stores the same payloads and hashes as SQLite, and verifies."""
        events = _turns(COPY_MIN * 3)

        def clock() -> str:
            return "2026-01-01T00:00:00+00:00"

        pg = eventstore.open(pg_url, clock=clock)
        lite = eventstore.open(str(tmp_path / "a.db"), clock=clock)
        with pg, lite:
            for journal in (pg, lite):
                journal.start_session("s", config()).extend(events)
            assert list(pg.recorder.read("s")) != []
            assert [row[1:] for row in pg.recorder.read("s")] == [
                row[1:] for row in lite.recorder.read("s")
            ]
            assert [f for f in verify(pg) if f.fatal] == []
