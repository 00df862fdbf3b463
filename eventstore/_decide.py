"""The safety half of ``decide``: a checked command -> the events to commit.

Shared by the live session, ``verify`` (which re-derives every recorded
decision) and ``import`` (which re-runs every command), so that the three can
never disagree. The only effect, writing a spill file, is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

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
    CallOpened,
    Compacted,
    CompactionRefused,
    ConstraintStated,
    Event,
    InvalidEvent,
    ItemDisposed,
    JournalError,
    MarkerEmitted,
    MarkerRefused,
    SessionState,
    Spilled,
    Truncated,
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


# The plain events that can take an obligation out of the digest context: a
# truncation evicts turns; an obligation raised (or a fact re-disposed) while the
# last turn is already evicted is born outside it. Turns, resolutions, lifts and
# checkpoints only ever add to the context or remove obligations.
CAN_BREAK_MARKERS = (Truncated, CallOpened, ConstraintStated, ItemDisposed)


def plain(state: SessionState, event: Event) -> Decision:
    """Commit a plain event, with one ``MarkerInvalidated`` per marker it breaks."""
    validate(state, event)
    after = apply(state, event)
    if not isinstance(event, CAN_BREAK_MARKERS):
        return Decision(events=(event,), state=after)
    broken = invalidations(after, cause=f"{type(event).__name__} at v{after.version}")
    return Decision(events=(event, *broken), state=fold(broken, after) if broken else after)


def batch(state: SessionState, events: Sequence[Event]) -> Decision:
    """Commit plain events in order, each validated on the state before it.

    With no valid marker (plain events never create one) nothing can be
    invalidated, so the batch is folded in one pass; otherwise each event is
    decided on its own and the invalidations it causes follow it.
    """
    if not any(m.valid for m in state.markers.values()):
        return Decision(events=tuple(events), state=fold(events, state, check=validate))
    out: list[Event] = []
    for event in events:
        decision = plain(state, event)
        out += decision.events
        state = decision.state or fold(decision.events, state)
    return Decision(events=tuple(out), state=state)


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
) -> Decision:
    """Commit ``proposal`` with the markers it breaks, or refuse it (spilling first).

    ``checked_against`` is ``state`` less any spill whose file no longer verifies.
    """
    validate(state, proposal)
    found = check_compaction(checked_against, proposal)
    if not found:
        after = apply(state, proposal)
        broken = invalidations(after, cause=f"Compacted {proposal.node_id}")
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


def raw_turns(state: SessionState, at: int) -> Iterator[tuple[int, int]]:
    """The turn index ranges of a raw context at checkpoint ``at``, in order.

    Every turn that ends at or before ``at``, then each later turn that holds an
    obligation still live (the turn at its position), so a raw fallback, like a
    trusted digest, never lacks one. Nothing is summarised, nothing patched.
    """
    prefix = state.turns_before(at)
    if prefix:
        yield 0, prefix
    positions = {
        o.position
        for group in (state.open_calls, state.constraints, state.dispositions)
        for o in group.values()
    }
    later = sorted({i for p in positions for i in state.turns_at(p) if i >= prefix})
    for i in later:
        yield i, i + 1


def resident_turns(state: SessionState) -> Iterator[tuple[int, int]]:
    """The turn index ranges still resident verbatim: neither truncated nor summarised.

    Zero-token turns at the end of a token-unit log are resident too.
    """
    lo = 0
    for gone_lo, gone_hi in state.evicted:
        if lo < gone_lo:
            yield state.turn_index(lo), state.turn_index(gone_lo)
        lo = max(lo, gone_hi)
    first = state.turn_index(lo)
    if first < state.turns:
        yield first, state.turns
