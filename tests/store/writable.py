"""A SQL backend with one bug, for the contract suite to catch: tierlog's SQLite
recorder whose ``query`` runs on the writing connection and commits (a timeout, but
no read-only guard)."""

from __future__ import annotations

import sqlite3
import time

from eventstore import InvalidArgument, QueryResult
from eventstore._sqlite import SqliteRecorder
from eventstore._store import seconds


class Writable(SqliteRecorder):
    """``query`` runs anything, and commits it."""

    def query(
        self, sql: str, *, timeout: float | None, heap_limit: int | None = None
    ) -> QueryResult:
        if not sql.strip():
            raise InvalidArgument("empty query")
        deadline = time.monotonic() + seconds(timeout)
        self.conn.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
        try:
            cursor = self.conn.execute(sql)
            rows = cursor.fetchall()
        except sqlite3.Error as exc:
            raise InvalidArgument(f"the query stopped: {exc}") from None
        finally:
            self.conn.set_progress_handler(None, 0)
        self.conn.commit()
        return QueryResult(columns=tuple(c[0] for c in cursor.description or ()), rows=rows)
