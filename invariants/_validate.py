"""Input rules that need the history: ranges inside the log, known ids. Pure.

``validate(state, event)`` raises :class:`InvalidEvent` for an event that cannot
follow ``state`` at all. It runs before the C and M rules, so a refusal is only
ever recorded for a well-formed proposal.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from typing import Any

from reducers import (
    MAX_COUNT,
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
    InvalidEvent,
    ItemDisposed,
    MarkerEmitted,
    MarkerInvalidated,
    MarkerRefused,
    Noted,
    Resumed,
    Retold,
    SessionStarted,
    SessionState,
    Spilled,
    Truncated,
    TurnAppended,
    TurnRetracted,
)


def validate(state: SessionState, event: Event) -> None:
    """Raise :class:`InvalidEvent` if ``event`` cannot follow ``state``."""
    if isinstance(event, SessionStarted):
        if state.config is not None:
            raise InvalidEvent("the session has already started")
        return
    if state.config is None:
        raise InvalidEvent(f"{type(event).__name__} before SessionStarted")
    keyed = KEYED_RULES.get(type(event))
    if keyed is not None:
        keyed(state.call_ids, state.open_calls, state.constraints, event)
        return
    check = _RULES.get(type(event))
    if check is not None:
        check(state, event)


def check_range(state: SessionState, what: str, lo: int, hi: int) -> None:
    """Raise :class:`InvalidEvent` unless ``[lo, hi)`` lies on turn boundaries in the log."""
    if type(lo) is not int or type(hi) is not int or not 0 <= lo <= hi:
        raise InvalidEvent(f"{what} needs integers 0 <= lo <= hi (got [{lo!r}, {hi!r}))")
    for pos in (lo, hi):
        if pos > state.end:
            raise InvalidEvent(f"{what} [{lo}, {hi}) is outside the log (it ends at {state.end})")
        if not state.on_boundary(pos):
            raise InvalidEvent(f"{what} [{lo}, {hi}): {pos} is not a turn boundary")


def check_turn(turns: int, tokens_total: int, e: TurnAppended) -> None:
    """``validate`` of a turn in a started session, from the two numbers it depends on:
    the turns so far and their tokens (``reducers.fold`` takes it as ``turn_check``)."""
    if e.index != turns:
        raise InvalidEvent(f"turn index {e.index}, expected {turns}")
    if e.tokens > MAX_COUNT - tokens_total:
        raise InvalidEvent(f"tokens: the session would hold more than 2**63-1 (got {e.tokens})")


def _turn(state: SessionState, e: TurnAppended) -> None:
    check_turn(state.turns, state.tokens_total, e)


Keys = Container[str]
KeyedRule = Callable[[Keys, Keys, Keys, Any], None]
"""``validate`` of an event in a started session from the three sets of keys it may
depend on: the call ids seen, the open calls and the pending constraints."""


def _call_opened(call_ids: Keys, open_calls: Keys, constraints: Keys, e: CallOpened) -> None:
    if e.call_id in call_ids:
        raise InvalidEvent(f"call {e.call_id!r} was already opened")


def _call_resolved(call_ids: Keys, open_calls: Keys, constraints: Keys, e: CallResolved) -> None:
    if e.call_id not in open_calls:
        raise InvalidEvent(f"unknown or already resolved call {e.call_id!r}")


def _lifted(call_ids: Keys, open_calls: Keys, constraints: Keys, e: ConstraintLifted) -> None:
    if e.key not in constraints:
        raise InvalidEvent(f"no pending constraint {e.key!r}")


def _noted(call_ids: Keys, open_calls: Keys, constraints: Keys, e: Noted) -> None:
    if e.count < 1:
        raise InvalidEvent(f"a note concerns at least one item (got count {e.count})")


def _any(call_ids: Keys, open_calls: Keys, constraints: Keys, e: Event) -> None:
    """Events that may follow any started session."""


KEYED_RULES: Mapping[type[Any], KeyedRule] = {
    CallOpened: _call_opened,
    CallResolved: _call_resolved,
    ConstraintStated: _any,
    ConstraintLifted: _lifted,
    ItemDisposed: _any,
    Noted: _noted,
    Ingested: _any,
}
"""The events whose validity in a started session depends on those keys alone:
``validate`` checks them so, and ``reducers.fold`` takes this as ``keyed_check``
(a checked fold then builds no state for them)."""


def _truncated(state: SessionState, e: Truncated) -> None:
    check_range(state, "truncation", e.lo, e.hi)


def _spilled(state: SessionState, e: Spilled) -> None:
    check_range(state, "spill", e.lo, e.hi)


def _checkpointed(state: SessionState, e: Checkpointed) -> None:
    check_range(state, "checkpoint", e.at, e.at)


def _compacted(state: SessionState, e: Compacted) -> None:
    if e.node_id in state.nodes:
        raise InvalidEvent(f"node {e.node_id!r} already exists")
    _proposal(state, e)


def _proposal(state: SessionState, e: Compacted) -> None:
    check_range(state, "input", e.input_lo, e.input_hi)
    check_range(state, "covers", e.covers_lo, e.covers_hi)
    check_range(state, "tail_start", e.tail_start, e.tail_start)
    unknown = [c for c in (*e.resolved_ids, *e.unresolved_ids) if c not in state.call_ids]
    if unknown:
        raise InvalidEvent(f"unknown call(s) {', '.join(map(repr, unknown))}")
    both = sorted(set(e.resolved_ids) & set(e.unresolved_ids))
    if both:
        raise InvalidEvent(f"call(s) {', '.join(map(repr, both))} both resolved and unresolved")
    for old in e.replaces:
        node = state.nodes.get(old)
        if node is None:
            raise InvalidEvent(f"replaces unknown node {old!r}")
        if not node.live:
            gone = f"replaced by {node.replaced_by}" if node.replaced_by else "cleared"
            raise InvalidEvent(f"replaces node {old!r}, which is no longer live ({gone})")


def _refused(state: SessionState, e: CompactionRefused) -> None:
    _proposal(state, e.proposal)


def _marker(state: SessionState, e: MarkerEmitted | MarkerRefused) -> None:
    if e.node_id not in state.nodes:
        raise InvalidEvent(f"unknown node {e.node_id!r}")
    if e.marker_id in state.markers:
        raise InvalidEvent(f"marker {e.marker_id!r} already exists")


def _known_marker(state: SessionState, e: MarkerInvalidated | Resumed) -> None:
    if e.marker_id not in state.markers:
        raise InvalidEvent(f"unknown marker {e.marker_id!r}")


def _retracted(state: SessionState, e: TurnRetracted) -> None:
    if e.index >= state.turns:
        raise InvalidEvent(f"turn {e.index} does not exist (the log has {state.turns} turns)")
    if state.is_withdrawn(e.index):
        raise InvalidEvent(f"turn {e.index} was already retracted or cleared")


def _cleared(state: SessionState, e: ContextCleared) -> None:
    if e.before != state.turns:
        raise InvalidEvent(
            f"a clear takes every turn: before must be the turn count {state.turns}"
            f" (got {e.before})"
        )


def _retold(state: SessionState, e: Retold) -> None:
    """A re-tell follows its own turn and states live obligations as they are now."""
    last = state.turns - 1
    if last < 0 or e.index != last or state.turn_versions[last] != state.version:
        raise InvalidEvent(f"Retold: turn {e.index} is not the turn appended just before it")
    wrong = [
        *(f"constraint {k!r}" for k, d in e.constraints.items() if _digest(state, k) != d),
        *(
            f"negative fact {k!r}"
            for k, d in e.dispositions.items()
            if k not in state.dispositions or state.dispositions[k].disposition != d
        ),
        *(f"call {k!r}" for k in e.calls if k not in state.open_calls),
    ]
    if wrong:
        raise InvalidEvent(f"Retold: {', '.join(wrong)} not live as re-told")


def _digest(state: SessionState, key: str) -> str | None:
    con = state.constraints.get(key)
    return con.digest if con is not None else None


_RULES: dict[type[Any], Callable[[SessionState, Any], None]] = {
    TurnAppended: _turn,
    Truncated: _truncated,
    Spilled: _spilled,
    Checkpointed: _checkpointed,
    Compacted: _compacted,
    CompactionRefused: _refused,
    MarkerEmitted: _marker,
    MarkerRefused: _marker,
    MarkerInvalidated: _known_marker,
    Resumed: _known_marker,
    TurnRetracted: _retracted,
    ContextCleared: _cleared,
    Retold: _retold,
}
