"""The safety half of ``decide``: a checked command -> the events to commit.

Shared by the live session, ``verify`` (which re-derives every recorded
decision) and ``import`` (which re-runs every command), so that the three can
never disagree. The only effect, writing a spill file, is passed in.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from invariants import (
    MarkerInvalid,
    UnrecoverableCompactionError,
    check_compaction,
    check_marker,
    invalidations,
    validate,
)
from reducers import (
    Compacted,
    CompactionRefused,
    Event,
    InvalidEvent,
    JournalError,
    MarkerEmitted,
    MarkerRefused,
    SessionState,
    Spilled,
    Violation,
    apply,
    fold,
)

MakeSpill = Callable[[SessionState, int, int], Spilled]


@attrs.frozen(kw_only=True)
class Decision:
    """What to commit, and the error to raise once it is committed."""

    events: tuple[Event, ...]
    error: JournalError | None = None
    state: SessionState | None = None  # the state after ``events``, when already folded


def node_id_for(state: SessionState) -> str:
    """The id of the node a compaction decided on ``state`` gets (deterministic)."""
    return f"n{state.version + 1}"


def marker_id_for(state: SessionState) -> str:
    """The id of the marker emitted on ``state`` (deterministic)."""
    return f"m{state.version + 1}"


def compaction(
    state: SessionState,
    proposal: Compacted,
    *,
    checked_against: SessionState,
    make_spill: MakeSpill,
    require_marker: bool = False,
) -> Decision:
    """Commit ``proposal`` with the markers it breaks, or refuse it (spilling first).

    ``checked_against`` is ``state`` less any spill whose file no longer verifies.
    ``require_marker`` also refuses a node that a marker could not be emitted on.
    """
    validate(state, proposal)
    found = check_compaction(checked_against, proposal)
    if require_marker:
        found += marker_gate(state, proposal)
    if not found:
        after = apply(state, proposal)
        broken = invalidations(after)
        return Decision(events=(proposal, *broken), state=fold(broken, after))
    events: list[Event] = []
    action = "halted"
    if state.config is not None and state.config.on_unsafe == "spill":
        events.append(make_spill(state, 0, state.end))
        action = "spilled"
    events.append(CompactionRefused(proposal=proposal, violations=found, action=action))
    return Decision(events=tuple(events), error=UnrecoverableCompactionError(found, action=action))


def marker(state: SessionState, marker_id: str, node_id: str) -> Decision:
    """Emit a marker on ``node_id``, or record its refusal (M1-M3)."""
    node = state.nodes.get(node_id)
    if node is None:
        raise InvalidEvent(f"unknown node {node_id!r}: a marker needs a committed summary node")
    emitted = MarkerEmitted(
        marker_id=marker_id, node_id=node_id, tier_depth=node.tier, resolved_ids=node.resolved_ids
    )
    validate(state, emitted)
    found = check_marker(state, node_id)
    if not found:
        return Decision(events=(emitted,))
    refused = MarkerRefused(marker_id=marker_id, node_id=node_id, violations=found)
    return Decision(events=(refused,), error=MarkerInvalid(found, marker_id=marker_id))


def resume_verdict(state: SessionState, marker_id: str) -> tuple[bool, str]:
    """Whether the marker is trusted wholesale, and the reason to record either way.

    A marker once invalidated or refused stays discarded; a valid one is re-checked.
    """
    m = state.markers[marker_id]
    if not m.valid:
        return False, f"marker discarded ({m.invalidated_rule}): {m.invalidated_reason}"
    found = check_marker(state, m.node_id, tier_depth=m.tier_depth)
    if found:
        return False, "; ".join(str(v) for v in found)
    return True, "M1-M3 hold: the digest is trusted wholesale"


def raw_checkpoint(state: SessionState, marker_id: str) -> int:
    """The nearest checkpoint at or below the marker node's ``covers_hi`` (0 if none)."""
    covers_hi = state.nodes[state.markers[marker_id].node_id].covers_hi
    return max((at for at in state.checkpoints if at <= covers_hi), default=0)


def marker_gate(state: SessionState, proposal: Compacted) -> list[Violation]:
    """The M rules a marker on ``proposal``'s node would break right after it commits.

    M3 is left out: a new node is live, and its tier is the runtime's choice. A runtime
    that replaces its history with the summary (the OpenAI Agents session) proposes
    with this gate, so a summary that drops an open call or a negative fact is refused
    before anything it replaces leaves the context.
    """
    return [v for v in check_marker(apply(state, proposal), proposal.node_id) if v.rule != "M3"]


def was_gated(recorded: Event) -> bool:
    """Whether a recorded compaction refusal came from the marker gate (an M rule)."""
    return isinstance(recorded, CompactionRefused) and any(
        v.rule.startswith("M") for v in recorded.violations
    )
