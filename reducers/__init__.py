"""Pure folds from tierlog events to :class:`SessionState`.

No I/O, no clock, no randomness: ``fold(events)`` gives the same state, with the
same ``sha256``, on every run and machine. The event vocabulary and the error
roots live here, at the bottom of the import graph, so that ``invariants`` and
``eventstore`` build on them and nothing imports upwards.
"""

from reducers._errors import InvalidEvent, JournalError
from reducers._events import (
    CALL_KINDS,
    DISPOSITIONS,
    EVENT_TYPES,
    UNITS,
    CallOpened,
    CallResolved,
    Checkpointed,
    Compacted,
    CompactionRefused,
    ConstraintLifted,
    ConstraintStated,
    Event,
    ItemDisposed,
    MarkerEmitted,
    MarkerInvalidated,
    MarkerRefused,
    Resumed,
    SessionConfig,
    SessionStarted,
    Spilled,
    Truncated,
    TurnAppended,
    Violation,
)
from reducers._fold import apply, fold, required_at_commit
from reducers._ledger import Ledger
from reducers._snapshot import chunk_rows, from_snapshot, ledger_lengths, to_snapshot
from reducers._state import (
    Marker,
    NegativeFact,
    Node,
    OpenCall,
    PendingConstraint,
    SessionState,
    Spill,
    Truncation,
    canonical_json,
    in_spans,
    merge_spans,
    span_covered,
)

__all__ = [
    "CALL_KINDS",
    "DISPOSITIONS",
    "EVENT_TYPES",
    "UNITS",
    "CallOpened",
    "CallResolved",
    "Checkpointed",
    "Compacted",
    "CompactionRefused",
    "ConstraintLifted",
    "ConstraintStated",
    "Event",
    "InvalidEvent",
    "ItemDisposed",
    "JournalError",
    "Ledger",
    "Marker",
    "MarkerEmitted",
    "MarkerInvalidated",
    "MarkerRefused",
    "NegativeFact",
    "Node",
    "OpenCall",
    "PendingConstraint",
    "Resumed",
    "SessionConfig",
    "SessionStarted",
    "SessionState",
    "Spill",
    "Spilled",
    "Truncated",
    "Truncation",
    "TurnAppended",
    "Violation",
    "apply",
    "canonical_json",
    "chunk_rows",
    "fold",
    "from_snapshot",
    "in_spans",
    "ledger_lengths",
    "merge_spans",
    "required_at_commit",
    "span_covered",
    "to_snapshot",
]
