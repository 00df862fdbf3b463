"""tierlog's imperative shell: the SQLite event store, the Journal/Session API, the CLI.

Everything a user needs is importable from here::

    journal = eventstore.open("agent.db")
    s = journal.start_session("mig-42", eventstore.SessionConfig(...))
    s.append_turn("user", "never modify files under /etc", 12)
"""

import importlib
from typing import TYPE_CHECKING, Any

# Where each public name lives. Nothing is imported by ``import eventstore`` itself: a
# name's module is imported when the name is first used (PEP 562), so a process that
# only needs a part (``tierlog --help``, a Claude Code hook, ``eventstore.cli``) does
# not pay for the store, the reducers and attrs' generated classes it never touches.
_HOMES = {
    "eventstore._errors": ("ConcurrencyError", "ConnectionLost", "IntegrityError"),
    "eventstore._journal": ("Journal", "open"),
    "eventstore._session": ("Session",),
    "eventstore._store": (
        "GENESIS",
        "AppendPath",
        "AuditReads",
        "AuditRows",
        "EventLog",
        "Head",
        "QueryResult",
        "Recorded",
        "Recorder",
        "ReplayReads",
        "SessionSummary",
        "SnapshotStore",
        "Statements",
        "StoredSnapshot",
        "Transfer",
    ),
    "eventstore._values": ("Context", "Retelling", "Turn"),
    "invariants": ("MarkerInvalid", "Owed", "UnrecoverableCompactionError"),
    "reducers": (
        "CallOpened",
        "CallResolved",
        "Checkpointed",
        "Compacted",
        "CompactionRefused",
        "ConstraintLifted",
        "ConstraintStated",
        "ContextCleared",
        "Event",
        "InvalidArgument",
        "InvalidEvent",
        "ItemDisposed",
        "JournalError",
        "Marker",
        "MarkerEmitted",
        "MarkerInvalidated",
        "MarkerRefused",
        "Node",
        "Resumed",
        "Retold",
        "SessionConfig",
        "SessionStarted",
        "SessionState",
        "Spill",
        "Spilled",
        "Truncated",
        "TurnAppended",
        "TurnRetracted",
        "Violation",
    ),
    # an integration: never imported by the core, whatever is used
    "eventstore.claude_code": ("CompactionReview", "IngestResult", "ObligationReview", "ingest"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module when first asked for."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'eventstore' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


if TYPE_CHECKING:
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
    from eventstore.claude_code import CompactionReview, IngestResult, ObligationReview, ingest
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
