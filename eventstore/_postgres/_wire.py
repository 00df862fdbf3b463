"""One psycopg connection and its round trips, for the PostgreSQL recorder.

Round trips are the cost of a server. A transaction's ``BEGIN`` waits for its first
statement, and its writes (``defer``) wait for the next read or the ``COMMIT``;
whatever waits is sent with it in one pipeline of prepared statements. A checked
commit is then two round trips: ``BEGIN``, lock, head; ``INSERT``, ``COMMIT``.
Nested transactions are savepoints, dropped unsent if nothing of them reached the
server before they failed. When each statement runs is ``Transactions``' business
(``eventstore._store``, the same for every backend); what is sent, and when it
waits, this module's. psycopg's errors leave as tierlog's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from eventstore._errors import ConcurrencyError
from reducers import JournalError

Statement = tuple[str, Sequence[object]]


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (psycopg's carry detail lines)."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class Wire:
    """A connection in autocommit mode, with the statements of tierlog's transactions
    (``AppendPath``'s, on top): ``BEGIN`` waits for the first statement, writes for
    the next read or the ``COMMIT``, and a savepoint of which nothing reached the
    server before it failed is dropped unsent."""

    def __init__(self, driver: Any, conn: Any, location: str) -> None:
        self.pg = driver
        self.conn = conn
        self.location = location
        self.waiting = False  # a BEGIN waits for the transaction's first statement
        self.pending: list[Statement] = []  # writes not sent yet
        self.flushes = 0
        self.marks: list[tuple[int, int]] = []  # per open savepoint: len(pending), flushes
        self.pipelines = bool(driver.Pipeline.is_supported())

    # -- the statements of a transaction (eventstore._store.Statements) ----------------
    def begin(self) -> None:
        """``BEGIN`` goes with the transaction's first statement."""
        self.waiting, self.pending, self.marks = True, [], []

    def commit(self) -> None:
        """``COMMIT`` with the writes that wait; nothing at all if nothing was sent."""
        try:
            if self.waiting and not self.pending:
                return  # nothing was sent: nothing to commit
            self.send(("COMMIT", ()))
        except JournalError:
            self.rollback()
            raise
        finally:
            self.waiting, self.pending = False, []

    def rollback(self) -> None:
        """Drop what waits and end the server's transaction, if one was begun."""
        self.waiting, self.pending, self.marks = False, [], []
        if self.conn.info.transaction_status != self.pg.pq.TransactionStatus.IDLE:
            with contextlib.suppress(self.pg.Error):
                self.conn.execute("ROLLBACK")

    def savepoint(self, name: str) -> None:
        """``SAVEPOINT`` waits with the writes."""
        self.marks.append((len(self.pending), self.flushes))
        self.pending.append((f"SAVEPOINT {name}", ()))

    def release(self, name: str) -> None:
        """``RELEASE`` waits with the writes."""
        self.marks.pop()
        self.pending.append((f"RELEASE {name}", ()))

    def rollback_to(self, name: str) -> None:
        """Drop the savepoint unsent if nothing of it reached the server, else roll
        the server back to it."""
        mark, flushes = self.marks.pop()
        if self.flushes == flushes:
            del self.pending[mark:]
            return
        self.pending.clear()
        self.send((f"ROLLBACK TO {name}", ()), (f"RELEASE {name}", ()))

    # -- round trips -------------------------------------------------------------------
    def defer(self, *statements: Statement) -> None:
        """Send these writes with the next statement, or the COMMIT."""
        self.pending += statements

    def send(self, *statements: Statement) -> Any:
        """Run a waiting BEGIN, the writes not sent yet and ``statements`` in one round
        trip (a pipeline of prepared statements); the last statement's cursor
        (``None`` if nothing was sent)."""
        queue: list[Statement] = [("BEGIN", ())] if self.waiting else []
        queue += self.pending
        queue += statements
        self.waiting, self.pending = False, []
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
