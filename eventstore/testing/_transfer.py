"""The contract of ``Transfer``: rows recorded elsewhere, written verbatim.

The rows come from a scratch SQLite journal, as ``tierlog import`` and ``ship``
bring them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

import eventstore
from eventstore import ConcurrencyError, IntegrityError, InvalidArgument, JournalError
from eventstore._store import GENESIS, EventLog, Recorder, Transfer, check_chain
from eventstore.testing._samples import TURN, turns

THEN = "2020-01-01T00:00:00+00:00"


class _Transferred(EventLog, Transfer, Protocol):
    """A log that takes rows recorded elsewhere."""


@contextlib.contextmanager
def _source(tmp_path: Path, n: int) -> Iterator[Recorder]:
    """A scratch journal whose session ``s`` holds ``n`` turns, recorded at ``THEN``."""
    with eventstore.open(tmp_path / "source.db", clock=lambda: THEN) as journal:
        journal.recorder.append("s", turns(n), expected_version=0)
        yield journal.recorder


class TransferContract:
    """What ``ship`` and ``import`` ask of the destination; the subclass provides
    ``recorder``."""

    def test_append_recorded_copies_rows_verbatim(
        self, recorder: _Transferred, tmp_path: Path
    ) -> None:
        """Rows recorded by another journal keep their versions, times and hashes, and
        a later batch continues where the first ended."""
        with _source(tmp_path, 4) as source:
            rows = list(source.read("s"))
        assert recorder.append_recorded("s", rows[:2]) == 2
        assert recorder.append_recorded("s", rows[2:]) == 4
        copied = [tuple(row)[1:] for row in recorder.read("s")]  # all but the global seq
        assert copied == [tuple(row)[1:] for row in rows]
        assert recorder.head("s") == (4, rows[-1].hash)

    def test_append_recorded_takes_any_iterable_and_only_rows(
        self, recorder: _Transferred, tmp_path: Path
    ) -> None:
        """Rows given as an iterator are checked and written alike; plain tuples, or a
        row whose version is text, are refused and nothing is written."""
        with _source(tmp_path, 3) as source:
            rows = list(source.read("s"))
        with pytest.raises(InvalidArgument, match="Recorded rows"):
            recorder.append_recorded("s", [tuple(row) for row in rows])  # type: ignore[misc]
        with pytest.raises(IntegrityError, match="not an integer"):
            recorder.append_recorded("s", [rows[0]._replace(version="1")])  # type: ignore[arg-type]
        assert recorder.head("s") == (0, GENESIS)
        assert recorder.append_recorded("s", iter(rows)) == 3  # type: ignore[arg-type]
        assert [r.hash for r in recorder.read("s")] == [r.hash for r in rows]

    def test_append_recorded_checks_every_link_first(
        self, recorder: _Transferred, tmp_path: Path
    ) -> None:
        """Rows that do not start at the head are a ConcurrencyError; a row whose
        payload was edited is an IntegrityError; either way nothing is written."""
        with _source(tmp_path, 3) as source:
            rows = list(source.read("s"))
        with pytest.raises(ConcurrencyError):
            recorder.append_recorded("s", rows[1:])
        edited = rows[2]._replace(payload=rows[2].payload.replace("t2", "t9"))
        with pytest.raises(IntegrityError, match="v3"):
            recorder.append_recorded("s", [*rows[:2], edited])
        assert recorder.head("s") == (0, GENESIS)
        assert recorder.sessions() == []

    @pytest.mark.parametrize("attach", [True, False])
    def test_copy_session_is_verbatim(
        self, recorder: _Transferred, tmp_path: Path, attach: bool
    ) -> None:
        """A session copied from a scratch journal has its rows, hashes and all, whether
        the backend attaches the scratch file or reads it row by row; the head read
        next in the same transaction is the copied one."""
        with _source(tmp_path, 4) as source:
            assert recorder.head("s") == (0, GENESIS)
            with (
                recorder.attached(source) if attach else contextlib.nullcontext(),
                recorder.transaction(),
            ):
                assert recorder.head("s") == (0, GENESIS)  # what import checks first
                recorder.copy_session(source, "s")
                assert recorder.head("s") == source.head("s")
            expected = [tuple(row)[1:] for row in source.read("s")]
        assert [tuple(row)[1:] for row in recorder.read("s")] == expected
        assert check_chain(recorder, "s") is None

    def test_copy_session_joins_the_callers_transaction(
        self, recorder: _Transferred, tmp_path: Path
    ) -> None:
        """Outside a transaction copy_session is a JournalError; in one that rolls
        back, nothing of the copy is kept."""
        with _source(tmp_path, 2) as source:
            with pytest.raises(JournalError):
                recorder.copy_session(source, "s")
            with contextlib.suppress(RuntimeError), recorder.transaction():
                recorder.copy_session(source, "s")
                raise RuntimeError("the import failed after the copy")
        assert recorder.head("s") == (0, GENESIS)
        recorder.append("s", [TURN], expected_version=0)
        assert recorder.head("s")[0] == 1
