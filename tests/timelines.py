"""What a report must show at one version, derived from the fold's own state.

The report's model (``eventstore._timeline.view_at``) and its script compute this
from the marks' versions; the tests compare both against this independent reading
of the ``SessionState`` that ``Session.state_at`` (``tierlog state --at``) returns.
"""

from __future__ import annotations

from collections import Counter

import attrs

import invariants
from reducers import Node, SessionState, in_spans


@attrs.frozen(kw_only=True)
class Expected:
    """The counts and statuses a report shows for one state."""

    turn_status: tuple[str, ...]
    nodes: dict[str, str]
    markers: dict[str, str]
    obligations: dict[tuple[str, str], str]
    occupancy: int
    depth: int
    tail_start: int

    @property
    def turn_counts(self) -> Counter[str]:
        """How many turns have each status."""
        return Counter(self.turn_status)

    def count(self, what: dict[str, str] | dict[tuple[str, str], str], status: str) -> int:
        """How many nodes, markers or obligations have ``status``."""
        return sum(1 for s in what.values() if s == status)


def _turn(state: SessionState, index: int, live: list[Node]) -> str:
    p = state.position_of_turn(index)
    if in_spans(state.truncated, p):
        return "spilled" if in_spans(state.spilled, p) else "truncated"
    return "summarised" if any(n.covers_lo <= p < n.covers_hi for n in live) else "resident"


def _marker(state: SessionState, marker_id: str) -> str:
    m = state.markers[marker_id]
    if m.valid:
        return "valid"
    refused = (m.invalidated_reason or "").startswith("refused at emission")
    return "refused" if refused else "invalidated"


def _obligation(state: SessionState, carried: bool, position: int) -> str:
    if carried:
        return "carried"
    return "dropped" if in_spans(state.evicted, position) else "open"


def expected(state: SessionState) -> Expected:
    """What the report must show for ``state``."""
    live = list(state.live_nodes)
    obligations = {}
    for c in state.open_calls.values():
        carried = any(invariants.carries_call(n, c.call_id) for n in live)
        obligations["open_call", c.call_id] = _obligation(state, carried, c.position)
    for k in state.constraints.values():
        carried = any(k.key in n.constraints for n in live)
        obligations["constraint", k.key] = _obligation(state, carried, k.position)
    for d in state.dispositions.values():
        carried = any(n.dispositions.get(d.key) == d.disposition for n in live)
        obligations["negative_fact", d.key] = _obligation(state, carried, d.position)
    return Expected(
        turn_status=tuple(_turn(state, i, live) for i in range(state.turns)),
        nodes={k: "live" if n.live else "replaced" for k, n in state.nodes.items()},
        markers={k: _marker(state, k) for k in state.markers},
        obligations=obligations,
        occupancy=state.occupancy,
        depth=state.depth,
        tail_start=state.tail_start,
    )
