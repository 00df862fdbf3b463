"""Does a node (or a proposal) carry an obligation? Its claims checked against the ledger.

A summary's fields are claims about the log. They count only where the ledger
agrees: an open call is carried only when listed as explicitly unresolved (listing
it as resolved while the log holds it open is a ``false_closure``), a pending
constraint only with the text the node saw (``Node.stale_constraints``), a negative
fact only with its current disposition. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reducers import (
    Compacted,
    NegativeFact,
    Node,
    OpenCall,
    PendingConstraint,
    SessionState,
    Violation,
)

Carrier = Node | Compacted


def carries_call(c: Carrier, call_id: str) -> bool:
    """Whether a node or proposal carries the open call ``call_id``: lists it as
    explicitly unresolved. A resolved listing of an open call is a false closure."""
    return call_id in c.unresolved_ids


def carries_constraint(c: Carrier, constraint: PendingConstraint) -> bool:
    """Whether a node or proposal carries the pending constraint with its live text (a
    proposal is decided on the live text, so its listing is enough)."""
    if isinstance(c, Compacted):
        return constraint.key in c.constraints
    return c.carries_constraint(constraint.key)


def carries_fact(c: Carrier, fact: NegativeFact) -> bool:
    """Whether a node or proposal carries the negative fact with its current disposition."""
    return c.dispositions.get(fact.key) == fact.disposition


def falsely_closed(c: Carrier, open_calls: Mapping[str, OpenCall]) -> list[str]:
    """The calls ``c`` lists as resolved that the log holds open (sorted); a node's own
    ``required_calls`` were open when it committed, so listing one is false too."""
    required = c.required_calls if isinstance(c, Node) else ()
    return sorted({k for k in c.resolved_ids if k in open_calls or k in required})


def false_closure(state: SessionState, c: Carrier) -> list[Violation]:
    """M1 ``false_closure``: ``c`` lists as resolved a call the log holds open."""
    calls = falsely_closed(c, state.open_calls)
    if not calls:
        return []
    positions = [state.open_calls[k].position for k in calls if k in state.open_calls]
    span = _span(positions) if positions else _span([c.covers_lo, c.covers_hi - 1])
    return [
        Violation(
            rule="M1",
            name="false_closure",
            message=(
                f"node {c.node_id} lists {', '.join(map(repr, calls))} as resolved"
                f" but the log holds {'it' if len(calls) == 1 else 'them'} open"
            ),
            lo=span[0],
            hi=span[1],
        )
    ]


def _span(positions: Iterable[int]) -> tuple[int, int]:
    found = list(positions)
    return min(found), max(found) + 1
