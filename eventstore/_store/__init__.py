"""The storage port and what every backend shares.

The chain, the codec, snapshots, the audit views' catalogue and spill storage.
"""

from __future__ import annotations

from eventstore._store._chain import GENESIS, ChainProblem, ChainWalk, Recorded, chain_hash
from eventstore._store._clock import utc_now
from eventstore._store._codec import SCHEMA_VERSION, converter, from_payload, from_rows
from eventstore._store._recorder import (
    AppendPath,
    AuditQueries,
    CompactionRefusalRow,
    FallbackRow,
    Head,
    InvalidationRow,
    MarkerRefusalRow,
    NoteRow,
    QueryResult,
    Recorder,
    Row,
    SessionSummary,
    StoredSnapshot,
    expect_version,
    read_range,
    seconds,
)
from eventstore._store._snapshots import SNAPSHOT_EVERY, Snapshots
from eventstore._store._spills import FolderSpills, handle_for, is_legacy
from eventstore._store._views import COMMON, audit_queries, render

__all__ = [
    "COMMON",
    "GENESIS",
    "SCHEMA_VERSION",
    "SNAPSHOT_EVERY",
    "AppendPath",
    "AuditQueries",
    "ChainProblem",
    "ChainWalk",
    "CompactionRefusalRow",
    "FallbackRow",
    "FolderSpills",
    "Head",
    "InvalidationRow",
    "MarkerRefusalRow",
    "NoteRow",
    "QueryResult",
    "Recorded",
    "Recorder",
    "Row",
    "SessionSummary",
    "Snapshots",
    "StoredSnapshot",
    "audit_queries",
    "chain_hash",
    "converter",
    "expect_version",
    "from_payload",
    "from_rows",
    "handle_for",
    "is_legacy",
    "read_range",
    "render",
    "seconds",
    "utc_now",
]
