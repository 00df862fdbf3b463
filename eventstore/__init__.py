"""tierlog's imperative shell: the SQLite event store, the Journal/Session API, the CLI.

Everything a user needs is importable from here::

    journal = eventstore.open("agent.db")
    s = journal.start_session("mig-42", eventstore.SessionConfig(...))
    s.append_turn("user", "never modify files under /etc", 12)
"""

import importlib
from typing import TYPE_CHECKING, Any

from eventstore._errors import ConcurrencyError, ConnectionLost, IntegrityError
from eventstore._journal import Journal, open
from eventstore._session import Session
from eventstore._store import (
    GENESIS,
    AppendPath,
    AuditReads,
    AuditRows,
    EventLog,
    Head,
    QueryResult,
    Recorded,
    Recorder,
    ReplayReads,
    SessionSummary,
    SnapshotStore,
    Statements,
    StoredSnapshot,
    Transfer,
)
from eventstore._values import Context, Retelling, Turn
from invariants import MarkerInvalid, Owed, UnrecoverableCompactionError
from reducers import (
    CallOpened,
    CallResolved,
    Checkpointed,
    Compacted,
    CompactionRefused,
    ConstraintLifted,
    ConstraintStated,
    ContextCleared,
    Event,
    InvalidArgument,
    InvalidEvent,
    ItemDisposed,
    JournalError,
    Marker,
    MarkerEmitted,
    MarkerInvalidated,
    MarkerRefused,
    Node,
    Resumed,
    Retold,
    SessionConfig,
    SessionStarted,
    SessionState,
    Spill,
    Spilled,
    Truncated,
    TurnAppended,
    TurnRetracted,
    Violation,
)

_LAZY = {  # an integration is imported on first use, never by ``import eventstore``
    "CompactionReview": "eventstore.claude_code",
    "IngestResult": "eventstore.claude_code",
    "ObligationReview": "eventstore.claude_code",
    "ingest": "eventstore.claude_code",
}


def __getattr__(name: str) -> Any:
    """The names an integration provides, imported when first asked for."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'eventstore' has no attribute {name!r}")


if TYPE_CHECKING:
    from eventstore.claude_code import CompactionReview, IngestResult, ObligationReview, ingest

__all__ = [
    "GENESIS",
    "AppendPath",
    "AuditReads",
    "AuditRows",
    "CallOpened",
    "CallResolved",
    "Checkpointed",
    "Compacted",
    "CompactionRefused",
    "CompactionReview",
    "ConcurrencyError",
    "ConnectionLost",
    "ConstraintLifted",
    "ConstraintStated",
    "Context",
    "ContextCleared",
    "Event",
    "EventLog",
    "Head",
    "IngestResult",
    "IntegrityError",
    "InvalidArgument",
    "InvalidEvent",
    "ItemDisposed",
    "Journal",
    "JournalError",
    "Marker",
    "MarkerEmitted",
    "MarkerInvalid",
    "MarkerInvalidated",
    "MarkerRefused",
    "Node",
    "ObligationReview",
    "Owed",
    "QueryResult",
    "Recorded",
    "Recorder",
    "ReplayReads",
    "Resumed",
    "Retelling",
    "Retold",
    "Session",
    "SessionConfig",
    "SessionStarted",
    "SessionState",
    "SessionSummary",
    "SnapshotStore",
    "Spill",
    "Spilled",
    "Statements",
    "StoredSnapshot",
    "Transfer",
    "Truncated",
    "Turn",
    "TurnAppended",
    "TurnRetracted",
    "UnrecoverableCompactionError",
    "Violation",
    "ingest",
    "open",
]
