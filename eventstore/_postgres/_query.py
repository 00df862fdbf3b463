"""``tierlog sql`` on PostgreSQL: one read-only statement, streamed, bounded in time.

The statement runs in a ``READ ONLY`` transaction that is always rolled back (never
committed: ``lo_from_bytea()`` and ``pg_notify()`` ignore ``READ ONLY``, and only a
COMMIT would keep their large object or send the NOTIFY), and an advisory lock it
took for the session is let go after it. Its rows come through a
server-side cursor, ``FETCH`` by ``FETCH``: the client holds one batch at a time,
however many rows the result has, and a FETCH brings fewer of them the wider they
are (``BATCH_BYTES``: rows as wide as the widest yet fit in it; one value is held
whole, so a single 1 GB value still needs 1 GB). ``DECLARE`` takes exactly one
``SELECT``/``VALUES``
statement (an ``EXPLAIN``, whose output is small, is fetched whole instead).

``timeout`` holds twice: ``statement_timeout`` on the server for each statement, and
a deadline on the client for the whole result, from ``DECLARE`` to the last row (a
timer cancels a ``FETCH`` still running at the deadline; a ``FETCH`` is not started
after it). Either ends the query with InvalidArgument.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Generator
from decimal import Decimal
from typing import Any

from eventstore._postgres._wire import Wire, first_line
from eventstore._store import QueryResult
from reducers import InvalidArgument, JournalError

FETCH = 1_000  # the most rows a FETCH brings
FIRST = 64  # the first FETCH's rows, before anything is known of their width
BATCH_BYTES = 16 * 2**20  # about the most text a FETCH brings: wide rows come fewer at a time
_EXPLAIN = re.compile(r"\s*(\(\s*)*explain\b", re.I)
HINT = " (tierlog sql is read-only: SELECT and WITH queries only)"


class Streamed:
    """One query's transaction, cursor and clock on the wire's connection."""

    def __init__(self, wire: Wire, sql: str, timeout: float | None) -> None:
        self.wire, self.sql, self.timeout = wire, sql, timeout
        self.deadline = time.monotonic() + timeout if timeout else float("inf")
        self.timer: threading.Timer | None = None
        self.cursor: Any = None
        self.closed = False
        self.count, self.widest = FIRST, 0  # the next FETCH's rows; the widest row yet

    def start(self) -> QueryResult:
        """Begin, declare (or run an EXPLAIN), and hand back the streamed result."""
        self.wire.streaming = True
        try:
            conn = self.wire.reading(_begin)
            conn.execute(
                "SELECT set_config('statement_timeout', %s, true)",
                (str(max(1, int(self.timeout * 1000))) if self.timeout else "0",),
            )
            self._arm(conn)
            names, first = self._declare(conn)
        except BaseException as exc:
            self.close()
            raise self.error(exc) from None
        rows = self._rows(first)

        def done() -> None:
            rows.close()
            self.close()

        return QueryResult(columns=names, rows=rows, done=done)

    def _declare(self, conn: Any) -> tuple[tuple[str, ...], list[tuple[object, ...]]]:
        if _EXPLAIN.match(self.sql):  # no cursor for EXPLAIN: its few lines come whole
            cursor = conn.cursor()
            cursor.execute(self.sql, prepare=True)  # one statement: no "EXPLAIN ...; COPY"
            return _names(cursor), cursor.fetchall()
        self.cursor = conn.cursor(name="tierlog_sql", scrollable=False, withhold=False)
        self.cursor.execute(self.sql)  # DECLARE: exactly one SELECT or VALUES
        names = _names(self.cursor)
        first = self._fetch()  # a query failing at once fails here, as on SQLite
        return names, first

    def _fetch(self) -> list[tuple[object, ...]]:
        """The next FETCH's rows (the cursor dropped after the last); the one after it
        brings as many rows as the widest yet fit in ``BATCH_BYTES``."""
        asked = self.count
        batch: list[tuple[object, ...]] = self.cursor.fetchmany(asked)
        self.widest = max(self.widest, max(map(_width, batch), default=0))
        self.count = max(1, min(FETCH, BATCH_BYTES // max(1, self.widest)))
        if len(batch) < asked:
            self._drop_cursor()  # every row is in: nothing more to fetch
        return batch

    def _drop_cursor(self) -> None:
        cursor, self.cursor = self.cursor, None
        if cursor is not None and not self.wire.lost():
            with contextlib.suppress(self.wire.pg.Error):
                cursor.close()

    def _arm(self, conn: Any) -> None:
        """A timer that cancels whatever statement still runs at the deadline."""
        if self.timeout:
            self.timer = threading.Timer(self.timeout, conn.cancel_safe)
            self.timer.daemon = True
            self.timer.start()

    def _rows(self, first: list[tuple[object, ...]]) -> Generator[tuple[object, ...], None, None]:
        try:
            yield from (tuple(map(_plain, row)) for row in first)
            while self.cursor is not None:
                if time.monotonic() > self.deadline:
                    raise self.stopped()
                try:
                    batch = self._fetch()
                except BaseException as exc:
                    raise self.error(exc) from None
                yield from (tuple(map(_plain, row)) for row in batch)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the timer, close the cursor and roll the transaction back (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()
        self._drop_cursor()
        self.wire.streaming = False
        self.wire.rollback()
        self._unlock()

    def _unlock(self) -> None:
        """Let go of the advisory locks the query took for the session (a rollback keeps
        those; tierlog's own are the transaction's, already gone)."""
        if not self.wire.lost():
            with contextlib.suppress(self.wire.pg.Error):
                self.wire.conn.execute("SELECT pg_advisory_unlock_all()")

    def stopped(self) -> InvalidArgument:
        return InvalidArgument(f"query stopped after {self.timeout or 0:g} s (--timeout)")

    def error(self, exc: BaseException) -> BaseException:
        """The tierlog error a failed step means (a Ctrl-C stays one)."""
        pg = self.wire.pg
        if not isinstance(exc, pg.Error):
            return exc
        if self.wire.lost():
            return self.wire.lost_error("while a query ran")
        if isinstance(exc, pg.errors.QueryCanceled):
            return self.stopped()
        if isinstance(exc, (pg.errors.ReadOnlySqlTransaction, pg.errors.InsufficientPrivilege)):
            return InvalidArgument(f"query failed: {first_line(exc)}{HINT}")
        return InvalidArgument(f"query failed: {first_line(exc)}")


def stream(wire: Wire, sql: str, timeout: float | None) -> QueryResult:
    """The rows of one read-only statement, streamed (see the module)."""
    if wire.pending or wire.open or wire.streaming:
        raise JournalError("query() runs in its own transaction, not inside another")
    return Streamed(wire, sql, timeout).start()


def _begin(conn: Any) -> Any:
    conn.execute("BEGIN READ ONLY")
    return conn


def _names(cursor: Any) -> tuple[str, ...]:
    return tuple(c.name for c in cursor.description or ())


def _plain(value: object) -> object:
    """Numbers as Python's own (``sum`` of bigints is numeric on PostgreSQL)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _width(row: tuple[object, ...]) -> int:
    """About the bytes of a row: its texts and blobs, its JSON as text, 8 for the rest."""
    return sum(map(_value_width, row))


def _value_width(value: object) -> int:
    if isinstance(value, (str, bytes)):
        return len(value)
    return len(str(value)) if isinstance(value, (dict, list)) else 8
