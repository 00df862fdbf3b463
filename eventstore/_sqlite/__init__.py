"""The embedded backend: one SQLite file, its schema, its pragmas and its guards."""

from __future__ import annotations

from eventstore._sqlite._recorder import SYNCHRONOUS, SqliteRecorder

__all__ = ["SYNCHRONOUS", "SqliteRecorder"]
