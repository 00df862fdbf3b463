"""Pure safety checks: (SessionState, proposed event) -> violations.

``check_compaction`` holds C1-C5 and ``check_marker`` M1-M3; ``validate``
rejects events that cannot follow a state at all (``InvalidEvent``). Nothing
here reads a file, a clock or a random source, so a replay re-derives every
recorded decision exactly.
"""

from invariants._compaction import carries_call, check_compaction, floor
from invariants._context import Gap, context_gaps
from invariants._errors import MarkerInvalid, UnrecoverableCompactionError
from invariants._marker import check_marker, invalidations
from invariants._validate import check_range, check_turn, validate
from reducers import Violation

__all__ = [
    "Gap",
    "MarkerInvalid",
    "UnrecoverableCompactionError",
    "Violation",
    "carries_call",
    "check_compaction",
    "check_marker",
    "check_range",
    "check_turn",
    "context_gaps",
    "floor",
    "invalidations",
    "validate",
]
