"""The promise a valid marker makes about the context it resumes to. Pure.

A digest context is the live summary nodes plus the verbatim turns still
resident. It must hold every live obligation, whatever happened since the marker
was emitted: each open call, pending constraint and negative fact is carried by
a live node (with the same disposition, for a negative fact) or held by a
resident turn: the turn at the obligation's position, neither truncated nor
folded into a live node. ``context_gaps`` lists the obligations that are in
neither; M1 speaks for calls and constraints, M2 for negative facts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import TypeVar

import attrs

from invariants._compaction import carries_call
from reducers import Node, SessionState, Violation, in_spans


@attrs.frozen(kw_only=True)
class Gap:
    """A live obligation the digest context does not hold, and why."""

    kind: str  # "open call", "constraint" or "negative fact"
    key: str
    position: int
    why: str
    disposition: str | None = None

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

    ``keys`` (``(kind, key)`` pairs) or ``within`` (a span of positions) narrow the
    search to the obligations an event touched; the answer for them is the same.
    """
    live = state.live_nodes
    evicted = state.evicted
    gaps: list[Gap] = []

    def held(position: int) -> bool:
        return state.turns > 0 and not in_spans(evicted, position)

    def wanted(kind: str, key: str, position: int) -> bool:
        if keys is not None and (kind, key) not in keys:
            return False
        return within is None or within[0] <= position < within[1]

    for call in _sorted(state.open_calls, "open call", keys):
        if not wanted("open call", call.call_id, call.position) or held(call.position):
            continue
        if not any(carries_call(n, call.call_id) for n in live):
            gaps.append(_gap(state, live, "open call", call.call_id, call.position))
    for con in _sorted(state.constraints, "constraint", keys):
        if not wanted("constraint", con.key, con.position) or held(con.position):
            continue
        if not any(con.key in n.constraints for n in live):
            gaps.append(_gap(state, live, "constraint", con.key, con.position))
    for fact in _sorted(state.dispositions, "negative fact", keys):
        if not wanted("negative fact", fact.key, fact.position) or held(fact.position):
            continue
        if not any(n.dispositions.get(fact.key) == fact.disposition for n in live):
            gap = _gap(state, live, "negative fact", fact.key, fact.position)
            gaps.append(attrs.evolve(gap, disposition=fact.disposition))
    return gaps


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
    return Gap(kind=kind, key=key, position=pos, why=_why(state, live, pos))


def _why(state: SessionState, live: tuple[Node, ...], pos: int) -> str:
    if state.turns == 0:
        return "no turn holds it yet"
    cut = next((t for t in state.truncations if t.lo <= pos < t.hi), None)
    if cut is not None:
        return f"truncated [{cut.lo}, {cut.hi}) at v{cut.version}"
    node = next((n for n in live if n.covers_lo <= pos < n.covers_hi), None)
    if node is None:
        return "withdrawn from the context (retracted or cleared)"
    return f"folded into {node.node_id}, which does not carry it"


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
