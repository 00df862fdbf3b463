"""Pure safety checks: (SessionState, proposed event) -> violations.

``check_compaction`` holds C1-C5 and ``check_marker`` M1-M3 (a node's claims
checked against the ledger: ``_claims``); ``owed`` lists what the working context
lacks; ``validate`` rejects events that cannot follow a state at all
(``InvalidEvent``). Nothing
here reads a file, a clock or a random source, so a replay re-derives every
recorded decision exactly.
"""

from invariants._claims import (
    carries_call,
    carries_constraint,
    carries_fact,
    false_closure,
    falsely_closed,
)
from invariants._compaction import check_compaction, floor
from invariants._context import Gap, context_gaps
from invariants._errors import MarkerInvalid, UnrecoverableCompactionError
from invariants._marker import check_marker, dropped_span, invalidations
from invariants._owed import Owed, owed
from invariants._validate import KEYED_RULES, KeyedRule, check_range, check_turn, validate
from reducers import Violation

__all__ = [
    "KEYED_RULES",
    "Gap",
    "KeyedRule",
    "MarkerInvalid",
    "Owed",
    "UnrecoverableCompactionError",
    "Violation",
    "carries_call",
    "carries_constraint",
    "carries_fact",
    "check_compaction",
    "check_marker",
    "check_range",
    "check_turn",
    "context_gaps",
    "dropped_span",
    "false_closure",
    "falsely_closed",
    "floor",
    "invalidations",
    "owed",
    "validate",
]
