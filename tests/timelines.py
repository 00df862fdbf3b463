"""What a report must show at one version, derived from the fold's own state.

The report's model (``eventstore._timeline.view_at``) and its script compute this
from the marks' versions; the tests compare both against this independent reading
of the ``SessionState`` that ``Session.state_at`` (``tierlog state --at``) returns.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import attrs

import eventstore
import invariants
from eventstore import Session
from reducers import Node, SessionState, in_spans
from tests.helpers import config, fill


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
    """Truncated (or spilled) first, then withdrawn by the runtime, then summarised."""
    p = state.position_of_turn(index)
    if in_spans(state.truncated, p):
        return "spilled" if in_spans(state.spilled, p) else "truncated"
    if state.is_withdrawn(index):
        return "withdrawn"
    return "summarised" if any(n.covers_lo <= p < n.covers_hi for n in live) else "resident"


def _node(node: Node) -> str:
    """A node that is not live was replaced, or else taken out by a ContextCleared."""
    if node.live:
        return "live"
    return "replaced" if node.replaced_by is not None else "cleared"


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
        nodes={k: _node(n) for k, n in state.nodes.items()},
        markers={k: _marker(state, k) for k in state.markers},
        obligations=obligations,
        occupancy=state.occupancy,
        depth=state.depth,
        tail_start=state.tail_start,
    )


def withdrawal_session(journal: eventstore.Journal, sid: str = "w", unit: str = "turns") -> Session:
    """A session whose runtime withdraws turns: it retracts a resident turn holding two
    obligations, a truncated turn and a summarised one, clears its context under a live
    summary and a valid marker, then goes on, summarises past the clear and retracts the
    turn of a call its new marker relies on."""
    s = journal.start_session(sid, config(truncator_unit=unit, floor_unit=unit))

    def turns(n: int) -> None:
        for _ in range(n):
            i = s.state.turns
            s.append_turn("user" if i % 2 else "assistant", f"turn {i}", (10, 25, 0, 40, 15)[i % 5])

    def at(i: int) -> int:
        return s.state.position_of_turn(i) if i < s.state.turns else s.state.end

    turns(4)
    s.truncate(at(0), at(1), "budget")
    s.open_call("c1", "tool_call", "grep")
    s.state_constraint("k1", "never touch /etc")
    s.retract_turn(3, "pop_item")  # c1 and k1 leave the context with their turn
    s.retract_turn(0, "pop_item")  # already truncated: it stays so
    turns(4)
    node = s.compact(
        tier=1,
        input=(0, at(6)),
        covers=(0, at(6)),
        tail_start=at(6),
        summary="turns 0-5",
        tokens=5,
        unresolved_ids=["c1"],
        constraints=["k1"],
    )
    s.emit_marker(node.node_id)
    s.retract_turn(5, "pop_item")  # inside the live summary
    s.dispose("d1", "rejected", "too slow")
    s.clear_context("clear_session")  # takes the summary out; the marker breaks
    turns(3)
    node = s.compact(
        tier=1,
        input=(0, at(9)),
        covers=(0, at(9)),
        tail_start=at(9),
        summary="all so far",
        tokens=4,
        unresolved_ids=["c1"],
        constraints=["k1"],
        dispositions={"d1": "rejected"},
    )
    s.emit_marker(node.node_id)
    s.open_call("c2", "tool_call", "cat")
    s.retract_turn(10, "pop_item")  # c2 leaves the context: the new marker breaks
    return s


LONG = 100_000  # characters of each free text of ``long_text_session``
LONG_KEY = 3_000  # characters of each of its keys


def long_text_session(journal: eventstore.Journal, sid: str = "long") -> Session:
    """A session whose free texts (a role, a call name, a constraint text, a disposition
    reason, an outcome, a summary, truncation, retraction, clear and refusal reasons)
    are each one unbroken ``LONG``-character token, and whose keys are ``LONG_KEY`` long:
    a refused compaction names one, and a clear breaks a marker that carries them."""
    call, rule, plan = ("c" * LONG_KEY, "k" * LONG_KEY, "p" * LONG_KEY)
    s = journal.start_session(sid, config())
    s.append_turn("R" * LONG, "x" * LONG, 5)
    s.open_call(call, "tool_call", "N" * LONG)
    s.state_constraint(rule, "T" * LONG)
    s.dispose(plan, "rejected", "W" * LONG)
    s.open_call("done", "tool_call", "ls")
    fill(s, 4)
    s.resolve_call("done", "O" * LONG)
    s.truncate(0, 1, "B" * LONG)
    with contextlib.suppress(eventstore.UnrecoverableCompactionError):  # its rules name the keys
        s.compact(tier=1, input=(0, 3), covers=(0, 3), tail_start=3, summary="x", tokens=1)
    node = s.compact(
        tier=1,
        input=(0, 3),
        covers=(0, 3),
        tail_start=3,
        summary="S" * LONG,
        tokens=3,
        unresolved_ids=[call],
        constraints=[rule],
        dispositions={plan: "rejected"},
    )
    s.emit_marker(node.node_id)
    s.retract_turn(4, "P" * LONG)
    s.clear_context("Z" * LONG)
    fill(s, 1)
    return s


def story_session(journal: eventstore.Journal) -> Session:
    """A token-unit session that spills: a refused then an accepted L1 summary, a valid
    marker, a checkpoint, a retraction, a digest resume, an L2 digest that replaces the
    L1 (its marker invalidated, a later resume falls back to raw), a refused marker, a
    lifted constraint, and a clear that takes the digest out under a valid marker."""
    s = journal.start_session(
        "story",
        config(truncator_unit="tokens", floor_unit="tokens", floor_span=20, on_unsafe="spill"),
    )
    s.append_turn("user", "Add tenant_id to orders. Never modify files under /etc.", 40)
    s.state_constraint("no-etc", "never modify files under /etc")
    s.open_call("call-1", "tool_call", "grep -rn tenant_id migrations/")
    s.append_turn("assistant", "Searching the migrations.", 10)
    s.open_call("call-2", "tool_call", "ls migrations/")
    s.append_turn("tool", "0001_init.sql 0002_orders.sql", 20)
    s.resolve_call("call-2", "2 files")
    s.dispose("plan-A", "rejected", "add-column-then-backfill locks the table")
    s.append_turn("tool", "orders.sql:12: tenant_id", 30)
    s.truncate(0, 40, "budget")
    with contextlib.suppress(eventstore.UnrecoverableCompactionError):
        s.compact(tier=1, input=(0, 70), covers=(0, 70), tail_start=70, summary="grep", tokens=1)
    carried: dict[str, Any] = {
        "constraints": ["no-etc"],
        "unresolved_ids": ["call-1"],
        "dispositions": {"plan-A": "rejected"},
    }
    span: dict[str, Any] = {"input": (0, 70), "covers": (0, 70), "tail_start": 70}
    l1 = s.compact(tier=1, summary="plan A out", tokens=9, **span, **carried)
    first = s.emit_marker(l1.node_id)
    s.checkpoint()
    s.append_turn("assistant", "Writing 0003_tenant.sql.", 15)
    s.append_turn("user", "ok", 5)
    s.retract_turn(5, "pop_item")
    s.resume(first.marker_id)
    l2 = s.compact(
        tier=2,
        input=(0, 115),
        covers=(0, 115),
        tail_start=115,
        summary="session digest",
        tokens=6,
        replaces=[l1.node_id],
        **carried,
    )
    s.resume(first.marker_id)
    with contextlib.suppress(eventstore.MarkerInvalid):
        s.emit_marker(l1.node_id)
    s.emit_marker(l2.node_id)
    s.lift_constraint("no-etc")
    s.clear_context("clear_session")
    s.append_turn("assistant", "Done.", 5)
    return s
