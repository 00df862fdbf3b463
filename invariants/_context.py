"""The promise a valid marker makes about the context it resumes to. Pure.

A digest context is the live summary nodes plus the verbatim turns still
resident. It must hold every live obligation, whatever happened since the marker
was emitted: each open call, pending constraint and negative fact is carried by
a live node (with the same disposition, for a negative fact) or held by a
resident turn: the turn at the obligation's position, neither truncated nor
folded into a live node, or the resident ``system`` turn that re-told it
(``Retold``, while what it stated is still the live text or disposition).
``context_gaps`` lists the obligations that are in none; M1 speaks for calls and
constraints, M2 for negative facts. A node's claims count only where the ledger
agrees with them (see ``_claims``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import TypeVar

import attrs

from invariants._claims import carries_call, carries_constraint, carries_fact
from reducers import Node, SessionState, Told, Violation, in_spans


@attrs.frozen(kw_only=True)
class Gap:
    """A live obligation the digest context does not hold, and why."""

    kind: str  # "open call", "constraint" or "negative fact"
    key: str
    position: int
    why: str
    disposition: str | None = None
    cause: str = "never_summarised"  # or "truncated", or "dropped" (by node_id)
    node_id: str | None = None

    @property
    def rule(self) -> str:
        """M2 for a negative fact, M1 for a call or a constraint."""
        return "M2" if self.kind == "negative fact" else "M1"

    def __str__(self) -> str:
        as_what = f" {self.disposition}" if self.disposition else ""
        return f"{self.kind} {self.key!r}{as_what} raised at {self.position} ({self.why})"


def context_gaps(
    state: SessionState,
    *,
    keys: Collection[tuple[str, str]] | None = None,
    within: tuple[int, int] | None = None,
) -> list[Gap]:
    """Every live obligation that no live node carries and no resident turn holds.

    ``keys`` (``(kind, key)`` pairs) or ``within`` (a span of positions: an obligation
    raised there, or re-told by a turn there) narrow the search to the obligations an
    event touched; the answer for them is the same.
    """
    live = state.live_nodes
    evicted = state.evicted
    gaps: list[Gap] = []

    def held(position: int) -> bool:
        return state.turns > 0 and not in_spans(evicted, position)

    def told(kind: str, key: str, stated: str) -> bool:
        t = state.retold.get(Told.slot(kind, key))
        return t is not None and t.stated == stated and held(state.position_of_turn(t.turn))

    def wanted(kind: str, key: str, position: int) -> bool:
        if keys is not None and (kind, key) not in keys:
            return False
        return within is None or _touches(state, within, kind, key, position)

    for call in _sorted(state.open_calls, "open call", keys):
        if not wanted("open call", call.call_id, call.position) or held(call.position):
            continue
        if told("open_call", call.call_id, ""):
            continue
        if not any(carries_call(n, call.call_id) for n in live):
            gaps.append(_gap(state, live, "open call", call.call_id, call.position))
    for con in _sorted(state.constraints, "constraint", keys):
        if not wanted("constraint", con.key, con.position) or held(con.position):
            continue
        if told("constraint", con.key, con.digest):
            continue
        if not any(carries_constraint(n, con) for n in live):
            gaps.append(_gap(state, live, "constraint", con.key, con.position))
    for fact in _sorted(state.dispositions, "negative fact", keys):
        if not wanted("negative fact", fact.key, fact.position) or held(fact.position):
            continue
        if told("negative_fact", fact.key, fact.disposition):
            continue
        if not any(carries_fact(n, fact) for n in live):
            gap = _gap(state, live, "negative fact", fact.key, fact.position)
            gaps.append(attrs.evolve(gap, disposition=fact.disposition))
    return gaps


_KINDS = {"open call": "open_call", "constraint": "constraint", "negative fact": "negative_fact"}


def _touches(state: SessionState, within: tuple[int, int], kind: str, key: str, pos: int) -> bool:
    """Whether an obligation was raised in ``within``, or re-told by a turn there."""
    if within[0] <= pos < within[1]:
        return True
    t = state.retold.get(Told.slot(_KINDS[kind], key))
    return t is not None and within[0] <= state.position_of_turn(t.turn) < within[1]


_O = TypeVar("_O")


def _sorted(
    obligations: Mapping[str, _O], kind: str, keys: Collection[tuple[str, str]] | None
) -> list[_O]:
    """The obligations of one kind in key order; only the named ones when ``keys`` is
    given (looked up, not scanned: the hot path of a long session)."""
    if keys is None:
        return [obligations[k] for k in sorted(obligations)]
    return [obligations[k] for kind_, k in sorted(keys) if kind_ == kind and k in obligations]


def _gap(state: SessionState, live: tuple[Node, ...], kind: str, key: str, pos: int) -> Gap:
    if state.turns == 0:
        return Gap(kind=kind, key=key, position=pos, why="no turn holds it yet")
    cut = next((t for t in state.truncations if t.lo <= pos < t.hi), None)
    if cut is not None:
        why = f"truncated [{cut.lo}, {cut.hi}) at v{cut.version}"
        return Gap(kind=kind, key=key, position=pos, why=why, cause="truncated")
    node = next((n for n in live if n.covers_lo <= pos < n.covers_hi), None)
    if node is None:
        why = "withdrawn from the context (retracted or cleared)"
        return Gap(kind=kind, key=key, position=pos, why=why)
    why = f"folded into {node.node_id}, which {_falsely(node, kind, key)}"
    return Gap(kind=kind, key=key, position=pos, why=why, cause="dropped", node_id=node.node_id)


def _falsely(node: Node, kind: str, key: str) -> str:
    """How a node that folded an obligation fails to carry it (the wording before the
    claim checks, where the node does not list it at all)."""
    if kind == "constraint" and key in node.constraints:
        return "carries another text of it"
    if kind == "open call" and key in node.resolved_ids:
        return "lists it as resolved while the log holds it open"
    return "does not carry it"


def gap_violations(gaps: list[Gap], *, skip: frozenset[str] = frozenset()) -> list[Violation]:
    """The M1 and M2 violations for ``gaps`` (keys in ``skip`` are reported elsewhere)."""
    return list(_violations([g for g in gaps if g.key not in skip]))


def _violations(gaps: list[Gap]) -> Iterator[Violation]:
    for rule, name in (("M1", "closure"), ("M2", "negative_fact_dropped")):
        mine = [g for g in gaps if g.rule == rule]
        if mine:
            yield Violation(
                rule=rule,
                name=name,
                message="the digest context lacks live " + "; ".join(map(str, mine)),
                lo=min(g.position for g in mine),
                hi=max(g.position for g in mine) + 1,
            )
