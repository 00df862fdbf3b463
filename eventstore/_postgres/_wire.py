"""One psycopg connection and its round trips, for the PostgreSQL recorder.

Round trips are the cost of a server. A transaction's ``BEGIN`` waits for its first
statement, and its writes (``defer``) wait for the next read or the ``COMMIT``;
whatever waits is sent with it in one pipeline of prepared statements. A checked
commit is then two round trips: ``BEGIN``, lock, head; ``INSERT``, ``COMMIT``.
Nested transactions are savepoints, dropped unsent if nothing of them reached the
server before they failed. psycopg's errors leave as tierlog's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from eventstore._errors import ConcurrencyError
from reducers import JournalError

Statement = tuple[str, Sequence[object]]


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (psycopg's carry detail lines)."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class Wire:
    """A connection in autocommit mode, with tierlog's own transactions on top."""

    def __init__(self, driver: Any, conn: Any, location: str) -> None:
        self.pg = driver
        self.conn = conn
        self.location = location
        self.depth = 0
        # sessions locked by the open transaction, with their heads as read or written
        self.locked: dict[str, tuple[int, str]] = {}
        self.begin = False  # a BEGIN waits for the transaction's first statement
        self.pending: list[Statement] = []  # writes not sent yet
        self.flushes = 0
        self.undo: list[list[Callable[[], None]]] = []  # per open (sub)transaction
        self.pipelines = bool(driver.Pipeline.is_supported())

    def transaction(self) -> Transaction:
        """One transaction: commit on success, roll back on error; nested, a savepoint."""
        return Transaction(self)

    def on_rollback(self, undo: Callable[[], None]) -> None:
        """Run ``undo`` if the open transaction (or savepoint) rolls back."""
        if self.undo:
            self.undo[-1].append(undo)

    def defer(self, *statements: Statement) -> None:
        """Send these writes with the next statement, or the COMMIT."""
        self.pending += statements

    def send(self, *statements: Statement) -> Any:
        """Run a waiting BEGIN, the writes not sent yet and ``statements`` in one round
        trip (a pipeline of prepared statements); the last statement's cursor
        (``None`` if nothing was sent)."""
        queue: list[Statement] = [("BEGIN", ())] if self.begin else []
        queue += self.pending
        queue += statements
        self.begin, self.pending = False, []
        if not queue:
            return None
        self.flushes += 1
        with self.mapped():
            if len(queue) == 1:
                return self.conn.execute(*queue[0])
            if not self.pipelines:  # libpq < 14: one round trip each
                return [self.conn.execute(sql, params) for sql, params in queue][-1]
            with self.conn.pipeline():
                cursors = [self.conn.execute(sql, params) for sql, params in queue]
            return cursors[-1]

    def copy(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        """``COPY ... FROM STDIN`` the rows, after whatever waits."""
        self.send()
        with self.mapped(), self.conn.cursor() as cur, cur.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)

    @contextmanager
    def mapped(self) -> Iterator[None]:
        """psycopg's errors as tierlog's: a duplicate version is a ConcurrencyError."""
        errors = self.pg.errors
        try:
            yield
        except errors.UniqueViolation as exc:  # only a writer that bypassed the lock
            raise ConcurrencyError(f"{self.location}: {first_line(exc)}") from None
        except errors.LockNotAvailable as exc:  # lock_timeout: a writer holds it, stalled
            raise ConcurrencyError(
                f"{self.location}: {first_line(exc)} (another writer holds the session's lock)"
            ) from None
        except errors.ReadOnlySqlTransaction:
            raise JournalError(f"{self.location} is open read-only") from None
        except self.pg.Error as exc:
            raise JournalError(f"{self.location}: {first_line(exc)}") from None

    def rollback(self) -> None:
        """End the server's transaction, if one was begun."""
        if self.conn.info.transaction_status != self.pg.pq.TransactionStatus.IDLE:
            with contextlib.suppress(self.pg.Error):
                self.conn.execute("ROLLBACK")


class Transaction:
    """The context manager behind :meth:`Wire.transaction`.

    The outermost one sends ``BEGIN`` with its first statement and its last writes
    with ``COMMIT``; a nested one is a savepoint, dropped unsent if nothing of it
    went to the server before it failed.
    """

    __slots__ = ("_flushes", "_mark", "_savepoint", "_wire")

    def __init__(self, wire: Wire) -> None:
        self._wire = wire
        self._savepoint = ""
        self._mark = 0
        self._flushes = 0

    def __enter__(self) -> None:
        rec = self._wire
        if rec.depth:
            self._savepoint = f"tierlog_{rec.depth}"
            self._mark, self._flushes = len(rec.pending), rec.flushes
            rec.pending.append((f"SAVEPOINT {self._savepoint}", ()))
            rec.undo.append([])
        else:
            rec.begin, rec.pending, rec.undo = True, [], [[]]
        rec.depth += 1

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        rec = self._wire
        rec.depth -= 1
        if self._savepoint:
            self._exit_savepoint(exc_type is not None)
            return
        rec.locked.clear()
        undo, rec.undo = rec.undo.pop(), []
        if exc_type is not None:
            rec.begin, rec.pending = False, []
            rec.rollback()
            _run(undo)
            return
        if rec.begin and not rec.pending:
            rec.begin = False
            return  # nothing was sent: nothing to commit
        try:
            rec.send(("COMMIT", ()))
        except JournalError:
            rec.rollback()
            _run(undo)
            raise
        finally:
            rec.begin, rec.pending = False, []

    def _exit_savepoint(self, failed: bool) -> None:
        rec, name = self._wire, self._savepoint
        undo = rec.undo.pop()
        if not failed:
            rec.undo[-1] += undo
            rec.pending.append((f"RELEASE {name}", ()))
            return
        _run(undo)
        if rec.flushes == self._flushes:  # nothing of it reached the server
            del rec.pending[self._mark :]
        else:
            rec.locked.clear()  # a lock taken inside may be gone with it
            rec.pending.clear()
            rec.send((f"ROLLBACK TO {name}", ()), (f"RELEASE {name}", ()))


def _run(undo: list[Callable[[], None]]) -> None:
    for step in reversed(undo):
        step()
