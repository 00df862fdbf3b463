"""tierlog's imperative shell: the SQLite event store, the Journal/Session API, the CLI.

Everything a user needs is importable from here::

    journal = eventstore.open("agent.db")
    s = journal.start_session("mig-42", eventstore.SessionConfig(...))
    s.append_turn("user", "never modify files under /etc", 12)
"""

from eventstore._errors import ConcurrencyError, IntegrityError
from eventstore._journal import Journal, open
from eventstore._session import Session
from eventstore._values import Context, Turn
from eventstore.claude_code._ingest import IngestResult, ingest
from eventstore.claude_code._review import CompactionReview, ObligationReview
from invariants import MarkerInvalid, UnrecoverableCompactionError
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
    InvalidEvent,
    ItemDisposed,
    JournalError,
    Marker,
    MarkerEmitted,
    MarkerInvalidated,
    MarkerRefused,
    Node,
    Resumed,
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
    "CallOpened",
    "CallResolved",
    "Checkpointed",
    "Compacted",
    "CompactionRefused",
    "CompactionReview",
    "ConcurrencyError",
    "ConstraintLifted",
    "ConstraintStated",
    "Context",
    "ContextCleared",
    "Event",
    "IngestResult",
    "IntegrityError",
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
    "Resumed",
    "Session",
    "SessionConfig",
    "SessionStarted",
    "SessionState",
    "Spill",
    "Spilled",
    "Truncated",
    "Turn",
    "TurnAppended",
    "TurnRetracted",
    "UnrecoverableCompactionError",
    "Violation",
    "ingest",
    "open",
]
