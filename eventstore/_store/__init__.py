"""The storage port and what every backend shares.

The port's roles (``Recorder``), the values they take and give, the append path and
its transactions (one base for every backend), the chain, the codec, snapshots, the
audit views' catalogue and spill storage.
"""

from __future__ import annotations

from eventstore._store._append import AppendPath, expect_version
from eventstore._store._chain import (
    GENESIS,
    ChainProblem,
    ChainWalk,
    Recorded,
    chain_hash,
    check_chain,
    link_rows,
    whole_rows,
)
from eventstore._store._clock import utc_now
from eventstore._store._codec import (
    SCHEMA_VERSION,
    from_payload,
    from_rows,
    strict_converter,
    to_payload,
)
from eventstore._store._links import LINK_COLUMNS, EventWalk, LinkRow, Links, link_rows_of
from eventstore._store._recorder import (
    AuditReads,
    EventLog,
    Recorder,
    ReplayReads,
    SnapshotStore,
    Transfer,
    read_range,
    seconds,
)
from eventstore._store._rows import (
    AuditQueries,
    AuditRows,
    CompactionRefusalRow,
    FallbackRow,
    Head,
    InvalidationRow,
    MarkerRefusalRow,
    NoteRow,
    QueryResult,
    Row,
    SessionSummary,
    StoredSnapshot,
    check_session_id,
)
from eventstore._store._snapshots import SNAPSHOT_EVERY, Snapshots
from eventstore._store._spills import FolderSpills, handle_for, is_legacy
from eventstore._store._transaction import Statements, Transactions
from eventstore._store._views import COMMON, REQUIRED, audit_queries, render

__all__ = [
    "COMMON",
    "GENESIS",
    "LINK_COLUMNS",
    "REQUIRED",
    "SCHEMA_VERSION",
    "SNAPSHOT_EVERY",
    "AppendPath",
    "AuditQueries",
    "AuditReads",
    "AuditRows",
    "ChainProblem",
    "ChainWalk",
    "CompactionRefusalRow",
    "EventLog",
    "EventWalk",
    "FallbackRow",
    "FolderSpills",
    "Head",
    "InvalidationRow",
    "LinkRow",
    "Links",
    "MarkerRefusalRow",
    "NoteRow",
    "QueryResult",
    "Recorded",
    "Recorder",
    "ReplayReads",
    "Row",
    "SessionSummary",
    "SnapshotStore",
    "Snapshots",
    "Statements",
    "StoredSnapshot",
    "Transactions",
    "Transfer",
    "audit_queries",
    "chain_hash",
    "check_chain",
    "check_session_id",
    "expect_version",
    "from_payload",
    "from_rows",
    "handle_for",
    "is_legacy",
    "link_rows",
    "link_rows_of",
    "read_range",
    "render",
    "seconds",
    "strict_converter",
    "to_payload",
    "utc_now",
    "whole_rows",
]
