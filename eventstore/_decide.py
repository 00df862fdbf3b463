"""``decide(command, state, effects) -> Decision``: the one place a command becomes events.

The live session, ``verify`` (which re-derives every recorded decision) and
``import`` (which re-runs every command) all call it, so the three can never
disagree. It validates, runs the invariants, folds the events it decides on,
and hands back the command's result; the only effects (reading turns back,
writing and checking spills) come in through ``effects``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs

from eventstore._commands import (
    AppendTurn,
    Checkpoint,
    ClearContext,
    Command,
    Compact,
    EmitMarker,
    Extend,
    Record,
    Resume,
    Retell,
    WriteSpill,
)
from eventstore._decision import Decision as Decision  # re-exported: it was defined here
from eventstore._decision import maker
from eventstore._effects import Effects
from eventstore._markers import emit_marker, resume
from eventstore._retell import retell
from eventstore._values import Turn
from invariants import (
    KEYED_RULES,
    UnrecoverableCompactionError,
    check_compaction,
    check_marker,
    check_range,
    check_turn,
    floor,
    invalidations,
    validate,
)
from reducers import (
    PLAIN_EVENTS,
    CallOpened,
    Checkpointed,
    Compacted,
    CompactionRefused,
    ConstraintStated,
    ContextCleared,
    Event,
    InvalidEvent,
    ItemDisposed,
    Ledger,
    SessionState,
    Truncated,
    TurnAppended,
    TurnRetracted,
    Violation,
    apply,
    fold,
    in_spans,
)

R = TypeVar("R")


def decide(command: Command[R], state: SessionState, effects: Effects) -> Decision[R]:
    """The decision on ``command`` for ``state``; InvalidEvent if it cannot follow it."""
    decider = _DECIDERS.get(type(command))
    if decider is None:
        raise InvalidEvent(f"not a tierlog command: {type(command).__name__}")
    decision: Decision[R] = decider(command, state, effects)
    return decision


# -- plain events ------------------------------------------------------------------------
# The plain events that can take an obligation out of the digest context: a
# truncation evicts turns; an obligation raised (or a fact re-disposed) while the
# last turn is already evicted is born outside it. Turns, resolutions, lifts and
# checkpoints only ever add to the context or remove obligations. A retraction or a
# clear withdraws turns (and a clear the live summaries) from the context.
CAN_BREAK_MARKERS = (
    Truncated,
    CallOpened,
    ConstraintStated,
    ItemDisposed,
    TurnRetracted,
    ContextCleared,
)


def _plain(state: SessionState, event: Event) -> tuple[tuple[Event, ...], SessionState]:
    """A plain event, with one ``MarkerInvalidated`` per marker it breaks, and the state."""
    if type(event) not in PLAIN_EVENTS:
        raise InvalidEvent(f"{type(event).__name__} is not a plain event: use its own command")
    validate(state, event)
    after = apply(state, event)
    if not isinstance(event, CAN_BREAK_MARKERS):
        return (event,), after
    cause = f"{type(event).__name__} at v{after.version}"
    broken = invalidations(after, cause, **_touched(event))
    return (event, *broken), fold(broken, after) if broken else after


def _touched(event: Event) -> dict[str, Any]:
    """The obligations a plain event can take out of the context (all, if not narrower)."""
    if isinstance(event, CallOpened):
        return {"keys": {("open call", event.call_id)}}
    if isinstance(event, ConstraintStated):
        return {"keys": {("constraint", event.key)}}
    if isinstance(event, ItemDisposed):
        return {"keys": {("negative fact", event.key)}}
    if isinstance(event, Truncated):
        return {"within": (event.lo, event.hi)}
    return {}


def _record(command: Record, state: SessionState, _: Effects) -> Decision[None]:
    events, after = _plain(state, command.event)
    return Decision(events=events, state=after, result=None)


def _extend(command: Extend, state: SessionState, _: Effects) -> Decision[SessionState]:
    """Plain events in order, folded in one pass up to the first that may break a valid
    marker; that one is decided on its own (with its invalidations), then the rest."""
    batch = command.events
    for event in batch:
        if type(event) not in PLAIN_EVENTS:
            raise InvalidEvent(f"{type(event).__name__} is not a plain event: use its own command")
    out: list[Event] = []
    while batch:
        at, state = _fold_until_suspect(state, batch)
        out += batch[:at]
        if at == len(batch):
            break
        events, state = _plain(state, batch[at])
        out += events
        batch = batch[at + 1 :]
    return Decision(events=tuple(out), state=state, result=state)


def would_invalidate(before: SessionState, event: Event) -> tuple[Event, ...]:
    """The ``MarkerInvalidated`` events a plain ``event`` would bring on ``before``
    (cheap unless it may break a valid marker): what replay expects after it."""
    if not any(m.valid for m in before.markers.values()) or not _may_break(before, event):
        return ()
    return _plain(before, event)[0][1:]


class _Suspect(Exception):
    """Stops a fold before an event that may break a valid marker."""


def _fold_until_suspect(state: SessionState, batch: tuple[Event, ...]) -> tuple[int, SessionState]:
    """How many events of ``batch`` fold without a chance of breaking a marker, and the
    state after them. With no valid marker (plain events never make one), all of them,
    turns checked by ``check_turn`` and calls, constraints, items, notes and ingest
    positions by ``KEYED_RULES`` (``validate``'s own rules, from the keys they depend
    on: no state built per event). Turns never break a marker."""
    if not any(m.valid for m in state.markers.values()):
        return len(batch), fold(
            batch, state, check=validate, turn_check=check_turn, keyed_check=KEYED_RULES
        )
    seen = 0

    def check(before: SessionState, event: Event) -> None:
        nonlocal seen
        validate(before, event)
        if _may_break(before, event):
            seen = before.version - state.version
            raise _Suspect

    try:
        return len(batch), fold(batch, state, check=check, turn_check=check_turn)
    except _Suspect:
        return seen, fold(batch[:seen], state)  # already validated


def _may_break(before: SessionState, event: Event) -> bool:
    """Whether ``event`` may take an obligation out of the digest context: a truncation or
    a withdrawal, or an obligation raised while the last turn is already evicted.

    A cheap, conservative test on the state before the event (a valid marker means the
    context lacked nothing then); ``_plain`` then decides exactly.
    """
    if isinstance(event, (CallOpened, ConstraintStated, ItemDisposed)):
        return before.turns == 0 or in_spans(before.evicted, before.last_position)
    return isinstance(event, CAN_BREAK_MARKERS)


def _clear_context(command: ClearContext, state: SessionState, _: Effects) -> Decision[None]:
    events, after = _plain(state, ContextCleared(before=state.turns, reason=command.reason))
    return Decision(events=events, state=after, result=None)


def _append_turn(command: AppendTurn, state: SessionState, _: Effects) -> Decision[Turn]:
    index = state.turns
    event = TurnAppended(
        index=index, role=command.role, content=command.content, tokens=command.tokens
    )
    validate(state, event)  # the session's token total stays a 63-bit count
    after = apply(state, event)
    turn = _turn(
        index=index,
        role=event.role,
        content=event.content,
        tokens=event.tokens,
        tok_start=after.tok_starts[index],
    )
    return _decision(events=(event,), state=after, result=turn, error=None)


# the hottest command's values, built without the frozen __init__'s setattr calls
_turn = maker(Turn)
_decision = maker(Decision)


def _checkpoint(_: Checkpoint, state: SessionState, __: Effects) -> Decision[int]:
    events, after = _plain(state, Checkpointed(at=state.end))
    return Decision(events=events, state=after, result=state.end)


def _write_spill(command: WriteSpill, state: SessionState, effects: Effects) -> Decision[Any]:
    check_range(state, "spill", command.lo, command.hi)
    spilled = effects.write_spill(state, command.lo, command.hi)
    validate(state, spilled)
    after = apply(state, spilled)
    return Decision(events=(spilled,), state=after, result=after.spills[-1])


# -- compaction --------------------------------------------------------------------------
def node_id_for(state: SessionState) -> str:
    """The id of the node a compaction decided on ``state`` gets (deterministic)."""
    return f"n{state.version + 1}"


def _compact(command: Compact, state: SessionState, effects: Effects) -> Decision[Any]:
    """Commit the proposal with the markers it breaks, or refuse it (spilling first)."""
    proposal = command.proposal(node_id_for(state))
    validate(state, proposal)
    found = check_compaction(verified(state, proposal, effects), proposal)
    if command.require_marker:
        found += marker_gate(state, proposal)
    if not found:
        after = apply(state, proposal)
        broken = invalidations(after, cause=f"Compacted {proposal.node_id}")
        after = fold(broken, after) if broken else after
        return Decision(
            events=(proposal, *broken), state=after, result=after.nodes[proposal.node_id]
        )
    events: list[Event] = []
    action = "halted"
    if state.config is not None and state.config.on_unsafe == "spill":
        events.append(effects.write_spill(state, 0, state.end))
        action = "spilled"
    events.append(CompactionRefused(proposal=proposal, violations=found, action=action))
    return Decision(
        events=tuple(events),
        state=fold(events, state),
        result=None,
        error=UnrecoverableCompactionError(found, action=action),
    )


def marker_gate(state: SessionState, proposal: Compacted) -> list[Violation]:
    """The M rules a marker on ``proposal``'s node would break right after it commits.

    M3 is left out: a new node is live, and its tier is the runtime's choice; so is a
    ``false_closure``, which ``check_compaction`` reports already. A runtime that
    replaces its history with the summary (the OpenAI Agents session) proposes with
    this gate, so a summary that drops an open call or a negative fact is refused
    before anything it replaces leaves the context.
    """
    found = check_marker(apply(state, proposal), proposal.node_id)
    return [v for v in found if v.rule != "M3" and v.name != "false_closure"]


def was_gated(recorded: Event) -> bool:
    """Whether a recorded compaction refusal came from the marker gate (an M rule other
    than ``false_closure``, which every compaction checks)."""
    return isinstance(recorded, CompactionRefused) and any(
        v.rule.startswith("M") and v.name != "false_closure" for v in recorded.violations
    )


def verified(state: SessionState, proposal: Compacted, effects: Effects) -> SessionState:
    """``state`` with only the spills C3 may trust for ``proposal``: spills that still
    read back as their recorded bytes, read newest first until they hold every
    truncated part of the floor.

    Nothing else can excuse anything, so no other spill is read: none at all when no
    truncation reaches into the floor.
    """
    window = floor(state, proposal)
    need = [] if window is None else _clip(state.truncated, *window)
    check = effects.spill_checker()
    good = []
    for s in reversed(state.spills):
        if not need:
            break
        if any(s.lo < hi and s.hi > lo for lo, hi in need) and check(s) is None:
            good.append(s)
            need = [p for lo, hi in need for p in ((lo, min(hi, s.lo)), (max(lo, s.hi), hi))]
            need = [(lo, hi) for lo, hi in need if lo < hi]
    if len(good) == len(state.spills):
        return state
    return attrs.evolve(state, spills=Ledger.of(good[::-1]))


def _clip(spans: Iterable[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """The parts of ``spans`` inside ``[lo, hi)``."""
    return [(max(a, lo), min(b, hi)) for a, b in spans if a < hi and b > lo]


_DECIDERS: dict[type[Any], Callable[[Any, SessionState, Effects], Decision[Any]]] = {
    Record: _record,
    Extend: _extend,
    AppendTurn: _append_turn,
    Checkpoint: _checkpoint,
    ClearContext: _clear_context,
    WriteSpill: _write_spill,
    Compact: _compact,
    EmitMarker: emit_marker,
    Resume: resume,
    Retell: retell,
}
