"""M1-M3: can a marker on this node be trusted on resume? Pure."""

from __future__ import annotations

from collections.abc import Collection, Iterator

from invariants._claims import carries_call, false_closure, falsely_closed
from invariants._context import Gap, context_gaps, gap_violations
from reducers import InvalidEvent, MarkerInvalidated, Node, SessionState, Violation


def check_marker(
    state: SessionState, node_id: str, *, tier_depth: int | None = None
) -> list[Violation]:
    """Every M1-M3 violation of a marker on ``node_id`` (empty when it can be trusted).

    ``tier_depth`` is the depth the marker claims; a new marker claims its node's tier.
    Beyond its node's own span, a marker promises that its digest context holds
    every live obligation (see ``context_gaps``).
    """
    return _check(state, node_id, tier_depth, context_gaps(state))


def dropped_span(state: SessionState, node_id: str) -> tuple[int, int] | None:
    """The raw range holding what a marker on ``node_id`` would lack: from the first turn
    holding an obligation its node dropped (or its digest context lacks) to the end of
    the last one; ``None`` when no turn holds any (a refusal for M3 alone)."""
    node = state.nodes.get(node_id)
    if node is None:
        raise InvalidEvent(f"unknown node {node_id!r}")
    positions = [g.position for g in context_gaps(state)]
    positions += _dropped_positions(state, node)
    if not positions or not state.turns:
        return None
    lo, last = min(positions), max(positions)
    after = state.turns_at(last)
    if not len(after):
        return None
    stop = after[-1] + 1
    hi = state.end if stop >= state.turns else state.position_of_turn(stop)
    return (lo, hi) if lo < hi else None


def _dropped_positions(state: SessionState, node: Node) -> list[int]:
    """Where the live obligations the node's own M1/M2 checks find dropped were raised."""
    false = falsely_closed(node, state.open_calls)
    calls = [c for c in node.required_calls if not carries_call(node, c)] + false
    return [
        *(state.open_calls[c].position for c in calls if c in state.open_calls),
        *(
            state.constraints[k].position
            for k in node.required_constraints
            if k not in node.constraints and k in state.constraints
        ),
        *(
            state.dispositions[k].position
            for k, d in node.required_dispositions.items()
            if node.dispositions.get(k) != d and k in state.dispositions
        ),
    ]


def invalidations(
    state: SessionState,
    cause: str = "",
    *,
    keys: Collection[tuple[str, str]] | None = None,
    within: tuple[int, int] | None = None,
) -> list[MarkerInvalidated]:
    """One ``MarkerInvalidated`` per valid marker that ``state`` breaks.

    ``cause`` names the event that broke them; it leads the recorded reason. While a
    marker is valid the digest context lacks nothing (the event that made a gap
    invalidated every valid marker), so after a plain event only the obligations it
    touched need a look: ``keys`` or ``within``, as for ``context_gaps``.
    """
    markers = sorted((m for m in state.markers.values() if m.valid), key=lambda m: m.marker_id)
    if not markers:
        return []
    gaps = context_gaps(state, keys=keys, within=within)
    out = []
    for marker in markers:
        found = _check(state, marker.node_id, marker.tier_depth, gaps)
        if found:
            reason = "; ".join(str(v) for v in found)
            out.append(
                MarkerInvalidated(
                    marker_id=marker.marker_id,
                    rule=found[0].rule,
                    reason=f"{cause}: {reason}" if cause else reason,
                )
            )
    return out


def _check(
    state: SessionState, node_id: str, tier_depth: int | None, gaps: list[Gap]
) -> list[Violation]:
    node = state.nodes.get(node_id)
    if node is None:
        raise InvalidEvent(f"unknown node {node_id!r}")
    depth = node.tier if tier_depth is None else tier_depth
    own = [*false_closure(state, node), *_closure(state, node), *_negative_facts(node)]
    reported = frozenset(_missing(state, node)) if own else frozenset()
    context = gap_violations(gaps, skip=reported)
    return [*own, *context, *_depth(state, node, depth)]


def _missing(state: SessionState, node: Node) -> Iterator[str]:
    """The keys the node's own M1/M2 checks already report as not carried."""
    yield from (c for c in node.required_calls if not carries_call(node, c))
    yield from falsely_closed(node, state.open_calls)
    yield from (k for k in node.required_constraints if k not in node.constraints)
    yield from (k for k, d in node.required_dispositions.items() if node.dispositions.get(k) != d)


def _closure(state: SessionState, node: Node) -> list[Violation]:
    false = set(falsely_closed(node, state.open_calls))  # reported as false_closure
    calls = [c for c in node.required_calls if not carries_call(node, c) and c not in false]
    constraints = [k for k in node.required_constraints if k not in node.constraints]
    if not calls and not constraints:
        return []
    parts = []
    if calls:
        parts.append(
            f"open calls {', '.join(map(repr, calls))} are neither resolved nor UNRESOLVED"
        )
    if constraints:
        parts.append(f"pending constraints {', '.join(map(repr, constraints))} are not carried")
    return [
        Violation(
            rule="M1",
            name="closure",
            message=f"node {node.node_id}: " + "; ".join(parts),
            lo=node.covers_lo,
            hi=node.covers_hi,
        )
    ]


def _negative_facts(node: Node) -> list[Violation]:
    wrong = []
    for key, disposition in sorted(node.required_dispositions.items()):
        carried = node.dispositions.get(key)
        if carried != disposition:
            as_what = "is missing" if carried is None else f"is carried as {carried!r}"
            wrong.append(f"{key!r} ({disposition}) {as_what}")
    if not wrong:
        return []
    return [
        Violation(
            rule="M2",
            name="negative_fact_dropped",
            message=f"node {node.node_id} covers negative facts it drops: " + ", ".join(wrong),
            lo=node.covers_lo,
            hi=node.covers_hi,
        )
    ]


def _depth(state: SessionState, node: Node, depth: int) -> list[Violation]:
    found = []
    framing = state.depth
    if depth != framing:
        found.append(
            Violation(
                rule="M3",
                name="depth_mismatch",
                message=f"marker depth is L{depth} but a live L{framing} digest frames the session",
                lo=node.covers_lo,
                hi=node.covers_hi,
            )
        )
    if not node.live:
        found.append(
            Violation(
                rule="M3",
                name="depth_mismatch",
                message=f"node {node.node_id} was replaced by {node.replaced_by}"
                if node.replaced_by
                else f"node {node.node_id} was cleared from the context",
                lo=node.covers_lo,
                hi=node.covers_hi,
            )
        )
    return found
