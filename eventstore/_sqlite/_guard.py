"""The limits of one read-only query on a SQLite connection (``tierlog sql``), and how
SQLite's failures read as tierlog errors.

``QueryGuard`` makes a connection read-only for one statement (``PRAGMA
query_only`` and an authorizer that denies every write, ``ATTACH`` and ``PRAGMA``,
and every function that hands out or takes a native pointer: ``fts3_tokenizer``
returns one, and registers one given two arguments, a known code-execution
primitive), bounds its memory, temporary storage included (``temp_store =
MEMORY``: a sort or a temporary index grows the heap the limit bounds, not files
on disk), and its time (a progress handler that also lets Ctrl-C through),
turns its failures into ``InvalidArgument``, ``IntegrityError`` or ``KeyboardInterrupt``,
and lifts every limit once, whatever happens.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Generator

from eventstore._errors import IntegrityError, is_corruption
from reducers import InvalidArgument

_READS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
    sqlite3.SQLITE_SAVEPOINT,
    sqlite3.SQLITE_TRANSACTION,
}


# SQL functions that hand out or take a native pointer (or load code): never run
POINTER_FUNCTIONS = frozenset({"fts3_tokenizer", "fts5", "load_extension"})


class QueryGuard:
    """One query's limits on a connection: installed, turned into errors, lifted once."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        readonly: bool,
        *,
        timeout: float | None,
        heap_limit: int | None,
    ) -> None:
        self.conn, self.readonly = conn, readonly
        self.timeout, self.heap_limit = timeout, heap_limit
        self.deadline = time.monotonic() + timeout if timeout else float("inf")
        self.refused: str | None = None  # a pointer function the query named
        self._undo: list[Callable[[], object]] = []

    def _authorize(self, action: int, first: str | None, second: str | None, *_: object) -> int:
        """Reads only (ATTACH, PRAGMA and every write are denied), and no function that
        hands out or takes a native pointer."""
        if action == sqlite3.SQLITE_FUNCTION and (second or "").lower() in POINTER_FUNCTIONS:
            self.refused = second
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_UPDATE and first == "sqlite_master":
            # a table-valued function's first use (json_each, json_tree) declares its
            # table and asks this; query_only (and a denied PRAGMA writable_schema)
            # keeps any real write to the schema from happening
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_OK if action in _READS else sqlite3.SQLITE_DENY

    def install(self) -> None:
        """Read-only, the memory limits, and a progress handler for the clock and Ctrl-C."""
        conn = self.conn
        if self.heap_limit:
            conn.execute(f"PRAGMA hard_heap_limit = {int(self.heap_limit)}")
            before = conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(before, int(self.heap_limit)))
            self._undo.append(lambda: conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, before))
            self._memory_temp_store()
        conn.execute("PRAGMA query_only = ON")
        if not self.readonly:
            self._undo.append(lambda: conn.execute("PRAGMA query_only = OFF"))
        conn.set_authorizer(self._authorize)
        self._undo.append(lambda: conn.set_authorizer(None))
        # Python code runs in the handler, so a pending Ctrl-C is raised there and
        # aborts the statement as SQLITE_INTERRUPT before the deadline: see error()
        conn.set_progress_handler(lambda: time.monotonic() > self.deadline, 10_000)
        self._undo.append(lambda: conn.set_progress_handler(None, 0))

    def _memory_temp_store(self) -> None:
        """Sorts and temporary tables in the heap the limit bounds, until lifted."""
        conn = self.conn
        (before,) = conn.execute("PRAGMA temp_store").fetchone()
        conn.execute("PRAGMA temp_store = MEMORY")

        def restore() -> None:
            with contextlib.suppress(sqlite3.Error):  # a connection of one query: harmless
                conn.execute(f"PRAGMA temp_store = {int(before)}")

        self._undo.append(restore)

    def undo_last(self, undo: Callable[[], object]) -> None:
        """Also run ``undo`` when lifting, after everything else."""
        self._undo.insert(0, undo)

    def lift(self) -> None:
        """Undo everything ``install`` did (idempotent)."""
        while self._undo:
            self._undo.pop()()

    def rows(self, cursor: sqlite3.Cursor) -> Generator[tuple[object, ...], None, None]:
        """The cursor's rows, failures turned into tierlog errors; lifts the limits at the end."""
        try:
            while True:
                try:
                    row = next(cursor, None)
                except (MemoryError, sqlite3.Error) as exc:
                    raise self.error(exc) from None
                if row is None:
                    return
                yield row
        finally:
            self.lift()

    def error(self, exc: MemoryError | sqlite3.Error) -> BaseException:
        """The tierlog error (or the Ctrl-C) that a failed step means."""
        name = getattr(exc, "sqlite_errorname", "")
        memory = f"its memory limit of {self.heap_limit / 2**20:g} MB" if self.heap_limit else ""
        if isinstance(exc, MemoryError) or (name == "SQLITE_TOOBIG" and memory):
            return InvalidArgument(f"query stopped: it needs more than {memory or 'memory'}")
        if name == "SQLITE_INTERRUPT":
            if time.monotonic() <= self.deadline:
                return KeyboardInterrupt()
            return InvalidArgument(f"query stopped after {self.timeout:g} s (--timeout)")
        if is_corruption(exc):
            return IntegrityError(f"database is corrupt: {exc}")
        if self.refused is not None:
            return InvalidArgument(
                f"query refused: {self.refused}() hands out or takes a native pointer"
            )
        denied = "not authorized" in str(exc) or "readonly" in str(exc)
        hint = " (tierlog sql is read-only: SELECT and WITH queries only)" if denied else ""
        return InvalidArgument(f"query failed: {exc}{hint}")
