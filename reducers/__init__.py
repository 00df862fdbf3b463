"""Pure folds from tierlog events to :class:`SessionState`.

No I/O, no clock, no randomness: ``fold(events)`` gives the same state, with the
same ``sha256``, on every run and machine. The event vocabulary and the error
roots live here, at the bottom of the import graph, so that ``invariants`` and
``eventstore`` build on them and nothing imports upwards.

Nothing is imported with the package: a name's module is imported when the name is
first used (PEP 562), so a process that needs the errors or the events does not
build the state's classes and the fold.
"""

import importlib
from typing import TYPE_CHECKING, Any

# Where each name lives.
_HOMES = {
    "reducers._errors": ("InvalidArgument", "InvalidEvent", "JournalError"),
    "reducers._events": (
        "CALL_KINDS",
        "DISPOSITIONS",
        "EVENT_TYPES",
        "MAX_COUNT",
        "PLAIN_EVENTS",
        "UNITS",
        "CallOpened",
        "CallResolved",
        "Checkpointed",
        "Compacted",
        "CompactionRefused",
        "ConstraintLifted",
        "ConstraintStated",
        "ContextCleared",
        "Event",
        "Ingested",
        "ItemDisposed",
        "MarkerEmitted",
        "MarkerInvalidated",
        "MarkerRefused",
        "Noted",
        "Resumed",
        "Retold",
        "SessionConfig",
        "SessionStarted",
        "Spilled",
        "Truncated",
        "TurnAppended",
        "TurnRetracted",
        "Violation",
        "handle_problem",
        "require_count",
        "require_name",
        "require_sequence",
        "require_span",
    ),
    "reducers._fold": ("apply", "fold"),
    "reducers._json": ("canonical_bytes", "canonical_json"),
    "reducers._ledger": ("Ledger",),
    "reducers._state": (
        "Marker",
        "NegativeFact",
        "Node",
        "OpenCall",
        "PendingConstraint",
        "SessionState",
        "Spill",
        "Told",
        "Truncation",
        "constraint_digest",
        "in_spans",
        "merge_spans",
        "span_covered",
    ),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module when first asked for."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


if TYPE_CHECKING:
    from reducers._errors import InvalidArgument, InvalidEvent, JournalError
    from reducers._events import (
        CALL_KINDS,
        DISPOSITIONS,
        EVENT_TYPES,
        MAX_COUNT,
        PLAIN_EVENTS,
        UNITS,
        CallOpened,
        CallResolved,
        Checkpointed,
        Compacted,
        CompactionRefused,
        ConstraintLifted,
        ConstraintStated,
        ContextCleared,
        Event,
        Ingested,
        ItemDisposed,
        MarkerEmitted,
        MarkerInvalidated,
        MarkerRefused,
        Noted,
        Resumed,
        Retold,
        SessionConfig,
        SessionStarted,
        Spilled,
        Truncated,
        TurnAppended,
        TurnRetracted,
        Violation,
        handle_problem,
        require_count,
        require_name,
        require_sequence,
        require_span,
    )
    from reducers._fold import apply, fold
    from reducers._json import canonical_bytes, canonical_json
    from reducers._ledger import Ledger
    from reducers._state import (
        Marker,
        NegativeFact,
        Node,
        OpenCall,
        PendingConstraint,
        SessionState,
        Spill,
        Told,
        Truncation,
        constraint_digest,
        in_spans,
        merge_spans,
        span_covered,
    )

__all__ = [
    "CALL_KINDS",
    "DISPOSITIONS",
    "EVENT_TYPES",
    "MAX_COUNT",
    "PLAIN_EVENTS",
    "UNITS",
    "CallOpened",
    "CallResolved",
    "Checkpointed",
    "Compacted",
    "CompactionRefused",
    "ConstraintLifted",
    "ConstraintStated",
    "ContextCleared",
    "Event",
    "Ingested",
    "InvalidArgument",
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
    "Noted",
    "OpenCall",
    "PendingConstraint",
    "Resumed",
    "Retold",
    "SessionConfig",
    "SessionStarted",
    "SessionState",
    "Spill",
    "Spilled",
    "Told",
    "Truncated",
    "Truncation",
    "TurnAppended",
    "TurnRetracted",
    "Violation",
    "apply",
    "canonical_bytes",
    "canonical_json",
    "constraint_digest",
    "fold",
    "handle_problem",
    "in_spans",
    "merge_spans",
    "require_count",
    "require_name",
    "require_sequence",
    "require_span",
    "span_covered",
]
