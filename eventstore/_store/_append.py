"""The append path every backend shares: transactions, heads, the expected version, links.

A backend subclasses ``AppendPath`` and gives it three things: the ``Statements`` of
its transactions, ``read_head`` (a session's head as stored, under the backend's lock
inside a write transaction) and ``insert`` (linked, checked rows into the open
transaction). Everything else on the way from ``append`` to ``insert`` is decided
here, once for every backend:

- every write runs in a transaction (``transaction``: nested, a savepoint), with its
  undo steps (``on_rollback``);
- a batch links to the session's head as held under the open transaction's lock
  (``head``: read once per transaction, then held; see ``_transaction``);
- the expected version is checked against that head once per commit, here; a caller
  that read the head in its own transaction hands it back (``head_hash``) and it is
  compared whole with the held one: never taken on trust;
- rows recorded elsewhere are checked link by link before they are written.
"""

from __future__ import annotations

import abc
import contextlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from contextlib import AbstractContextManager

from eventstore._errors import ConcurrencyError
from eventstore._store._chain import Recorded, check_links, link_rows
from eventstore._store._recorder import EventLog
from eventstore._store._rows import Head, Row, check_session_id
from eventstore._store._transaction import Statements, Transactions
from reducers import Event, InvalidArgument, InvalidEvent, JournalError, require_count


def batch(events: object) -> Sequence[Event]:
    """``events`` as a sequence, in the order given; InvalidEvent for what has no order
    of events (nothing, a number, text, a set, a mapping)."""
    if isinstance(events, list | tuple):
        return events
    if isinstance(events, str | bytes | Mapping | Set) or not isinstance(events, Iterable):
        raise InvalidEvent(f"events: expected a sequence of events, got {type(events).__name__}")
    return list(events)


def expect_version(session_id: str, version: int, expected: int) -> None:
    """ConcurrencyError unless the session is at the version the writer expects."""
    if version != expected:
        raise ConcurrencyError(
            f"session {session_id!r} is at version {version}, expected {expected}"
        )


class AppendPath(abc.ABC):
    """``transaction``, ``head``, ``append``, ``append_recorded`` and ``copy_session``
    for a backend that gives its statements, ``read_head`` and ``insert``."""

    def __init__(self, statements: Statements, clock: Callable[[], str]) -> None:
        self._tx = Transactions(statements)
        self._block = self._tx.block()  # stateless: one serves every transaction
        self._clock = clock

    @abc.abstractmethod
    def read_head(self, session_id: str) -> Head:
        """The session's last version and hash as stored (``0`` and ``GENESIS`` when
        empty). Inside a write transaction, take first whatever lock keeps other
        writers off the session until the transaction ends."""

    @abc.abstractmethod
    def insert(self, rows: Sequence[Row]) -> None:
        """Insert rows of one session (linked and checked, one or more) in the open
        transaction; a version already stored is a ConcurrencyError."""

    stream_min: int = sys.maxsize  # batches this long go to ``insert_events``

    def insert_events(
        self, session_id: str, head: Head, events: Sequence[Event], recorded_at: str
    ) -> Head:
        """Link ``events`` (at least one) after ``head`` and ``insert`` them; the head they
        make. A backend may link them as it sends them (``stream_min`` and longer)."""
        rows = link_rows(session_id, head.version, head.hash, events, recorded_at)
        self.insert(rows)
        return Head(rows[-1][1], rows[-1][7])

    # -- transactions ------------------------------------------------------------------
    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction: commit on success, roll back on error. Inside another
        it is a savepoint: an error rolls back this block only."""
        return self._block

    def on_rollback(self, undo: Callable[[], None]) -> None:
        """Run ``undo`` if the open transaction (or savepoint) rolls back instead of
        committing: how a file written for a decision is removed with it. Outside a
        transaction nothing is registered."""
        self._tx.on_rollback(undo)

    def head(self, session_id: str) -> Head:
        """The session's last version and hash; inside a write transaction, read under
        the backend's lock once, then held until the transaction ends."""
        tx = self._tx
        if not tx.depth:
            return self.read_head(session_id)
        head = tx.held.get(session_id)
        if head is None:
            head = tx.held[session_id] = self.read_head(session_id)
        return head

    # -- appending ---------------------------------------------------------------------
    def append(
        self,
        session_id: str,
        events: Sequence[Event],
        *,
        expected_version: int,
        head_hash: str | None = None,
    ) -> int:
        """Append ``events`` atomically after ``expected_version``; returns the new version.

        Raises :class:`ConcurrencyError` if the session is at another version. Joins
        the caller's transaction when one is open; a caller that has read the head in
        that transaction may hand it back (``expected_version`` and its hash as
        ``head_hash``), and it is compared with the held head instead.
        """
        require_count("expected_version", expected_version)
        check_session_id(session_id)
        if type(events) is not tuple:
            events = batch(events)
        if self._tx.depth:
            return self._append(session_id, events, expected_version, head_hash)
        if head_hash is not None:
            raise JournalError("head_hash is only trusted inside the caller's transaction")
        with self.transaction():
            return self._append(session_id, events, expected_version, None)

    def _append(
        self, session_id: str, events: Sequence[Event], expected: int, head_hash: str | None
    ) -> int:
        held = self._tx.held  # ``head`` and ``_write``, inline: once a commit
        head = held.get(session_id) or self.head(session_id)
        if head_hash is None:
            expect_version(session_id, head.version, expected)
        elif head != (expected, head_hash):
            raise ConcurrencyError(
                f"session {session_id!r} is at version {head.version}: the head handed"
                f" back (version {expected}) is not the one this transaction holds"
            )
        if len(events) >= self.stream_min:  # a long batch the backend links as it stores
            held[session_id] = made = self.insert_events(session_id, head, events, self._clock())
            return made.version
        rows = link_rows(session_id, head.version, head.hash, events, self._clock())
        if rows:
            self.insert(rows)
            last = rows[-1]
            held[session_id] = Head(last[1], last[7])
        return head.version + len(rows)

    def _write(self, session_id: str, rows: Sequence[Row]) -> None:
        """``insert`` the rows, and hold the head they make if the session's is held."""
        if not rows:
            return
        self.insert(rows)
        held = self._tx.held
        if session_id in held:
            held[session_id] = Head(rows[-1][1], rows[-1][7])

    # -- rows recorded elsewhere -------------------------------------------------------
    def append_recorded(self, session_id: str, rows: Sequence[Recorded]) -> int:
        """Insert rows recorded elsewhere, verbatim, after this journal's head; each
        link is checked first (IntegrityError), a moved head is a ConcurrencyError."""
        check_session_id(session_id)
        rows = list(rows)  # checked, then written: an iterator would be spent by the check
        for row in rows:
            if not isinstance(row, Recorded):
                raise InvalidArgument(
                    f"append_recorded takes Recorded rows, not {type(row).__name__}"
                )
        with self.transaction():
            last = check_links(session_id, self.head(session_id), rows)
            self._write(session_id, [row[1:] for row in rows])
        return last

    def attached(self, source: EventLog) -> AbstractContextManager[None]:
        """Nothing to attach: :meth:`copy_session` reads ``source`` row by row."""
        return contextlib.nullcontext()

    def copy_session(self, source: EventLog, session_id: str) -> None:
        """Insert ``session_id``'s rows from ``source`` verbatim, in the caller's
        transaction, which has checked under its lock (``head``) that the session is
        new; ``import`` made them in a scratch journal, so the links are not checked
        again."""
        if not self._tx.depth:
            raise JournalError("copy_session joins the caller's transaction; open one")
        self._write(session_id, [row[1:] for row in source.read(session_id)])
