"""Markers and resumes: emit a marker or record its refusal (spilling what its node
dropped), resume from one wholesale, and the contexts a resume renders.

Part of ``decide`` (``eventstore._decide`` dispatches ``EmitMarker`` and ``Resume``
here); ``verify`` and ``import`` re-derive both through it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import attrs

from eventstore._commands import EmitMarker, Resume
from eventstore._decision import Decision
from eventstore._effects import Effects
from eventstore._files import render_digest, render_turns
from eventstore._values import Context
from invariants import MarkerInvalid, check_marker, dropped_span, validate
from reducers import (
    InvalidEvent,
    MarkerEmitted,
    MarkerRefused,
    SessionState,
    Spilled,
    apply,
    fold,
)


def marker_id_for(state: SessionState) -> str:
    """The id of the marker emitted on ``state`` (deterministic)."""
    return f"m{state.version + 1}"


def emit_marker(command: EmitMarker, state: SessionState, effects: Effects) -> Decision[Any]:
    """Emit a marker on the node, or record its refusal (M1-M3), after a spill of what
    its node dropped when the session spills on unsafe."""
    node = state.nodes.get(command.node_id)
    if node is None:
        raise InvalidEvent(
            f"unknown node {command.node_id!r}: a marker needs a committed summary node"
        )
    marker_id = marker_id_for(state)
    emitted = MarkerEmitted(
        marker_id=marker_id,
        node_id=node.node_id,
        tier_depth=node.tier,
        resolved_ids=node.resolved_ids,
    )
    validate(state, emitted)
    found = check_marker(state, node.node_id)
    if not found:
        after = apply(state, emitted)
        return Decision(events=(emitted,), state=after, result=after.markers[marker_id])
    spilled = _refusal_spill(state, node.node_id, effects)
    refused = MarkerRefused(
        marker_id=marker_id,
        node_id=node.node_id,
        violations=found,
        action="halted" if spilled is None else "spilled",
    )
    events = (refused,) if spilled is None else (spilled, refused)
    return Decision(
        events=events,
        state=fold(events, state),
        result=None,
        error=MarkerInvalid(found, marker_id=marker_id, spilled=spilled),
    )


def _refusal_spill(state: SessionState, node_id: str, effects: Effects) -> Spilled | None:
    """With ``on_unsafe="spill"``, a spill of the raw turns holding what the refused
    marker's node dropped (``invariants.dropped_span``); none for M3 alone."""
    if state.config is None or state.config.on_unsafe != "spill":
        return None
    span = dropped_span(state, node_id)
    return None if span is None else effects.write_spill(state, *span)


def resume(command: Resume, state: SessionState, effects: Effects) -> Decision[Context]:
    context = context_for(state, command.marker_id, effects)
    event = context.event()
    after = apply(state, event)
    return Decision(
        events=(event,), state=after, result=attrs.evolve(context, version=after.version)
    )


def context_for(state: SessionState, marker_id: str, effects: Effects) -> Context:
    """The context a resume of ``marker_id`` on ``state`` returns (nothing written)."""
    if marker_id not in state.markers:
        raise InvalidEvent(f"unknown marker {marker_id!r}")
    trusted, reason = resume_verdict(state, marker_id)
    if trusted:
        source, at = "digest", None
        data = render_digest(state.live_nodes, effects.turns(state, resident_turns(state)))
    else:
        source, at = "raw_checkpoint", raw_checkpoint(state, marker_id)
        data = render_turns(effects.turns(state, raw_turns(state, at)))
    return Context(
        marker_id=marker_id,
        source=source,
        content=data.decode(),
        sha256=hashlib.sha256(data).hexdigest(),
        checkpoint_at=at,
        reason=reason,
        version=state.version,
    )


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
