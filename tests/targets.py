"""Where a test's journal lives, and a side door to it: rows read through another
connection, and tampering behind tierlog's back (triggers bypassed)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Protocol

import pytest

import eventstore
from tests.helpers import behind_its_back

BACKENDS = ("sqlite", "postgres")
EVENTS = "SELECT * FROM events ORDER BY seq"

on_both = pytest.mark.parametrize("backend", BACKENDS, indirect=True)


class Target(Protocol):
    """A journal location, and another connection to it."""

    backend: str
    location: str

    def open(self, **options: Any) -> eventstore.Journal:
        """The journal, opened with ``eventstore.open``."""

    def rows(self, sql: str = EVENTS) -> list[tuple[Any, ...]]:
        """Rows read through a separate, plain connection."""

    def tamper(self, sql: str) -> None:
        """Run a write with the immutability triggers out of the way, and commit it."""

    def spill(self, handle: str) -> bytes | None:
        """The stored bytes of a spill, or ``None``."""

    def set_spill(self, handle: str, data: bytes | None) -> None:
        """Replace (or with ``None`` remove) a spill's stored bytes behind tierlog's back."""


class SqliteTarget:
    """A journal file; spills are files beside it."""

    backend = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)

    def open(self, **options: Any) -> eventstore.Journal:
        return eventstore.open(self.path, **options)

    def rows(self, sql: str = EVENTS) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.path)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()

    def tamper(self, sql: str) -> None:
        with behind_its_back(self.path) as conn:
            conn.execute(sql)

    def _spill_path(self, handle: str) -> Path:
        """The file of a handle: inside ``<db file>.spills/`` (0.1 handles name it too)."""
        root = Path(f"{self.path}.spills")
        first, _, rest = handle.partition("/")
        return root / rest if first.endswith(".spills") else root / handle

    def spill(self, handle: str) -> bytes | None:
        path = self._spill_path(handle)
        return path.read_bytes() if path.exists() else None

    def set_spill(self, handle: str, data: bytes | None) -> None:
        path = self._spill_path(handle)
        if data is None:
            path.unlink()
        else:
            path.write_bytes(data)


class PostgresTarget:
    """A schema of the throwaway cluster; spills are rows of ``spill_data``."""

    backend = "postgres"

    def __init__(self, url: str) -> None:
        self.location = url

    def open(self, **options: Any) -> eventstore.Journal:
        return eventstore.open(self.location, **options)

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(self.location, autocommit=True)

    def rows(self, sql: str = EVENTS) -> list[tuple[Any, ...]]:
        with self._connect() as conn:
            return [tuple(row) for row in conn.execute(sql.encode()).fetchall()]

    def tamper(self, sql: str, params: tuple[object, ...] | None = None) -> None:
        with self._connect() as conn:
            conn.execute("SET session_replication_role = replica")  # no user triggers
            conn.execute(sql.encode() if params is None else sql, params)

    def spill(self, handle: str) -> bytes | None:
        found = self.rows_with("SELECT data FROM spill_data WHERE handle = %s", (handle,))
        return bytes(found[0][0]) if found else None

    def rows_with(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        with self._connect() as conn:
            return [tuple(row) for row in conn.execute(sql, params).fetchall()]

    def set_spill(self, handle: str, data: bytes | None) -> None:
        if data is None:
            self.tamper("DELETE FROM spill_data WHERE handle = %s", (handle,))
        else:
            self.tamper(
                "UPDATE spill_data SET data = %s, bytes = base_bytes + %s WHERE handle = %s",
                (data, len(data), handle),
            )
