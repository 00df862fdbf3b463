"""One psycopg connection and its round trips, for the PostgreSQL recorder.

Round trips are the cost of a server. A transaction's ``BEGIN`` waits for its first
statement, and its writes (``defer``) wait for the next read or the ``COMMIT``;
whatever waits is sent with it in one pipeline of prepared statements. A checked
commit is then two round trips: ``BEGIN``, lock, head; ``INSERT``, ``COMMIT``.
Nested transactions are savepoints, dropped unsent if nothing of them reached the
server before they failed. When each statement runs is ``Transactions``' business
(``eventstore._store``, the same for every backend); what is sent, and when it
waits, this module's. psycopg's errors leave as tierlog's.

A connection that breaks (the server restarted, the network cut it) is replaced on
the next call: a round trip that finds it broken reconnects and is sent again when
nothing of it can have committed (a read, or a transaction's first round trip,
which begins it). A transaction that had already reached the server fails with
:class:`ConnectionLost`, which its rollback turns into nothing written; the call
after it reconnects.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from eventstore._errors import ConcurrencyError, ConnectionLost
from reducers import JournalError

Statement = tuple[str, Sequence[object]]
T = TypeVar("T")


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (psycopg's carry detail lines)."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class Wire:
    """A connection in autocommit mode, with the statements of tierlog's transactions
    (``AppendPath``'s, on top): ``BEGIN`` waits for the first statement, writes for
    the next read or the ``COMMIT``, and a savepoint of which nothing reached the
    server before it failed is dropped unsent."""

    def __init__(
        self,
        driver: Any,
        conn: Any,
        location: str,
        reconnect: Callable[[], Any] | None = None,
    ) -> None:
        self.pg = driver
        self.conn = conn
        self.location = location
        self.reconnect = reconnect  # a new connection, set up as the first one was
        self.closed = False  # closed by its owner: never reconnected
        self.open = False  # a BEGIN reached the server: its transaction is open there
        self.streaming = False  # a query's rows stream on the connection
        self.waiting = False  # a BEGIN waits for the transaction's first statement
        self.pending: list[Statement] = []  # writes not sent yet
        self.flushes = 0
        self.marks: list[tuple[int, int]] = []  # per open savepoint: len(pending), flushes
        self.pipelines = bool(driver.Pipeline.is_supported())

    # -- the statements of a transaction (eventstore._store.Statements) ----------------
    def begin(self) -> None:
        """``BEGIN`` goes with the transaction's first statement."""
        if self.streaming:
            raise JournalError("a query's rows are still streaming on this journal: close it")
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
            self.waiting, self.pending, self.open = False, [], False

    def rollback(self) -> None:
        """Drop what waits and end the server's transaction, if one was begun (on a
        broken connection there is none left to end)."""
        self.waiting, self.pending, self.marks, self.open = False, [], [], False
        if self.lost():
            return
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
        begins = queue[0][0] == "BEGIN"
        commits = any(sql == "COMMIT" for sql, _ in queue)
        again = (begins or not self.open) and not commits  # nothing of it can commit
        self.live()
        self.flushes += 1
        self.open = self.open or begins
        try:
            return self._run(queue)
        except ConnectionLost:
            if not again:
                when = "at COMMIT: it may have committed" if commits else ""
                raise self.lost_error(when) from None
            self.open = False
            self.live()
            self.open = begins
            return self._run(queue)

    def _run(self, queue: list[Statement]) -> Any:
        with self.mapped():
            if len(queue) == 1:
                return self.conn.execute(*queue[0])
            if not self.pipelines:  # libpq < 14: one round trip each
                return [self.conn.execute(sql, params) for sql, params in queue][-1]
            with self.conn.pipeline():
                cursors = [self.conn.execute(sql, params) for sql, params in queue]
            return cursors[-1]

    # -- a broken connection -----------------------------------------------------------
    def lost(self) -> bool:
        """Whether the connection broke (or was closed) under its owner."""
        return bool(self.conn.broken or self.conn.closed)

    def live(self) -> Any:
        """The connection, a new one if it broke outside a transaction; ConnectionLost
        if it broke inside one (or cannot be replaced now), JournalError once closed."""
        if self.closed:
            raise JournalError(f"{self.location}: the journal is closed")
        if not self.lost():
            return self.conn
        if self.open or self.reconnect is None:
            raise self.lost_error("")
        try:
            self.conn = self.reconnect()
        except JournalError as exc:
            raise ConnectionLost(f"{self.location}: the connection was lost: {exc}") from None
        self.pipelines = bool(self.pg.Pipeline.is_supported())
        return self.conn

    def reading(self, read: Callable[[Any], T]) -> T:
        """``read(connection)``, once more on a new connection if the first was found
        broken (outside a transaction, a read may always run again)."""
        conn = self.live()
        try:
            return read(conn)
        except self.pg.Error:
            if self.open or not self.lost():
                raise
        return read(self.live())

    def lost_error(self, when: str) -> ConnectionLost:
        """The error of a transaction the connection broke under."""
        what = when or "the transaction in flight did not commit"
        return ConnectionLost(
            f"{self.location}: the connection was lost ({what}); the next call reconnects"
        )

    def close(self) -> None:
        """Close the connection for good (idempotent)."""
        self.closed = True
        self.conn.close()

    def copy(self, sql: str, rows: Iterable[Sequence[object]], types: Sequence[str] = ()) -> None:
        """``COPY ... FROM STDIN`` the rows, after whatever waits, each sent as it comes
        (an error raised by ``rows`` fails the COPY); ``types``: the columns' types,
        which a ``(FORMAT BINARY)`` copy needs."""
        self.send()
        self.live()
        with self.mapped(), self.conn.cursor() as cur, cur.copy(sql) as copy:
            if types:
                copy.set_types(list(types))
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
            if self.lost() or (isinstance(exc, self.pg.OperationalError) and self._dead()):
                raise self.lost_error(first_line(exc)) from None
            raise JournalError(f"{self.location}: {first_line(exc)}") from None

    def _dead(self) -> bool:
        """After an operational error on a connection not yet known broken (a pipeline
        cut mid-flight): whether the server still answers; if not, the connection is
        closed, so that the next call reconnects."""
        try:
            self.conn.execute("SELECT 1")
        except self.pg.DatabaseError as exc:
            if exc.sqlstate is not None and not self.lost():  # the server answered
                return False
        except Exception:  # any other failure: the connection is unusable
            pass
        else:
            return False
        with contextlib.suppress(Exception):
            self.conn.close()
        return True
