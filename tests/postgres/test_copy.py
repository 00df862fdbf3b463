"""Long batches go to PostgreSQL through a binary COPY: what they store is what
SQLite stores, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import eventstore
import reducers as r
from eventstore._ops._audit import verify
from eventstore._postgres._recorder import COPY_MIN, LINKED
from eventstore._store import link_rows
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

    def test_a_batch_linked_as_it_streams_stores_what_sqlite_stores(
        self, pg_url: str, tmp_path: Path
    ) -> None:
        """A batch of several ``LINKED`` slices, linked as the COPY streams, continues
        the chain from one slice to the next as one ``link_rows`` of the batch does."""
        events = _turns(LINKED * 2 + 5)

        def clock() -> str:
            return "2026-01-01T00:00:00+00:00"

        pg = eventstore.open(pg_url, clock=clock)
        lite = eventstore.open(str(tmp_path / "a.db"), clock=clock)
        with pg, lite:
            for journal in (pg, lite):
                s = journal.start_session("s", config())
                s.extend(events[:3])
                s.extend(events[3:])
            assert [row[1:] for row in pg.recorder.read("s")] == [
                row[1:] for row in lite.recorder.read("s")
            ]
            assert pg.recorder.head("s") == lite.recorder.head("s")
            assert [f for f in verify(pg) if f.fatal] == []

    def test_a_failure_in_a_later_slice_writes_nothing(
        self, pg_url: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An error while the second slice is linked fails the COPY: none of the batch
        (nor the rest of its transaction) is stored, and the session goes on."""
        from eventstore._postgres import _recorder

        calls = []

        def failing(*args: Any) -> Any:
            calls.append(args)
            if len(calls) == 2:
                raise RuntimeError("linking failed")
            return link_rows(*args)

        events = _turns(LINKED * 2)
        with eventstore.open(pg_url) as pg:
            s = pg.start_session("s", config())
            monkeypatch.setattr(_recorder, "link_rows", failing)
            with pytest.raises(RuntimeError, match="linking failed"):
                s.extend(events)
            monkeypatch.undo()
            assert len(calls) == 2
            assert pg.recorder.head("s").version == 1
            s = pg.session("s")
            s.extend(events)
            assert pg.recorder.head("s").version == 1 + len(events)
            assert [f for f in verify(pg) if f.fatal] == []

    def test_a_failure_in_a_later_slice_of_a_nested_block_rolls_back_that_block_only(
        self, pg_url: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Inside a caller's transaction, a long batch that fails while it streams (its
        COPY already on the server, unlike a batch linked whole before it is sent) rolls
        back its savepoint alone: the caller's writes before and after it commit."""
        from eventstore._postgres import _recorder

        calls = []

        def failing(*args: Any) -> Any:
            calls.append(args)
            if len(calls) == 2:
                raise RuntimeError("linking failed")
            return link_rows(*args)

        with eventstore.open(pg_url) as pg:
            pg.start_session("x", config())
            pg.start_session("s", config())
            recorder = pg.recorder
            monkeypatch.setattr(_recorder, "link_rows", failing)
            with recorder.transaction():
                recorder.append("x", _turns(1), expected_version=1)
                with pytest.raises(RuntimeError, match="linking failed"), recorder.transaction():
                    recorder.append("s", _turns(LINKED * 2), expected_version=1)
                recorder.append("x", _turns(2)[1:], expected_version=2)
            monkeypatch.undo()
            assert len(calls) == 2
            assert (recorder.head("x").version, recorder.head("s").version) == (3, 1)
            assert [f for f in verify(pg) if f.fatal] == []
