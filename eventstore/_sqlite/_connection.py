"""One SQLite connection: how it is opened, what it becomes when closed, and the
statements of ``AppendPath``'s transactions on it (``BEGIN IMMEDIATE``, savepoints)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from eventstore._errors import ConcurrencyError
from reducers import JournalError


class _Connected(Protocol):
    conn: sqlite3.Connection
    path: Path


class Closed:
    """What a closed recorder's connection becomes: any use of it is a JournalError,
    where SQLite's own would be a ProgrammingError."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __getattr__(self, name: str) -> Any:
        raise JournalError(f"{self.path}: the journal is closed")


def connect(path: Path, *, readonly: bool, timeout: float) -> sqlite3.Connection:
    if readonly:
        if not path.is_file():
            raise JournalError(f"no journal at {path}")
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=timeout)
    if path.is_dir():
        raise JournalError(f"{path} is a folder, not a journal file")
    return sqlite3.connect(path, isolation_level=None, timeout=timeout)


class Statements:
    """What ``AppendPath``'s transactions tell SQLite: ``BEGIN IMMEDIATE``, savepoints,
    and nothing in autocommit once SQLite has rolled the transaction back by itself."""

    __slots__ = ("_store",)

    def __init__(self, store: _Connected) -> None:
        self._store = store

    def begin(self) -> None:
        try:
            self._store.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise ConcurrencyError(f"journal is busy: {exc}") from None

    def commit(self) -> None:
        conn = self._store.conn
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise JournalError(f"commit failed, nothing was written: {exc}") from None

    def rollback(self) -> None:
        conn = self._store.conn
        if conn.in_transaction:  # SQLite rolls back by itself after some errors
            conn.execute("ROLLBACK")

    def savepoint(self, name: str) -> None:
        conn = self._store.conn
        if not conn.in_transaction:  # SQLite rolled it back after an error
            raise JournalError(f"{self._store.path}: the transaction was rolled back")
        conn.execute(f"SAVEPOINT {name}")

    def release(self, name: str) -> None:
        self._store.conn.execute(f"RELEASE {name}")

    def rollback_to(self, name: str) -> None:
        conn = self._store.conn
        if conn.in_transaction:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
