"""Obligations as the simulator sees them, and the one judge both arms are measured with.

An obligation is what the SPEC calls one: an open call, a pending constraint, a
negative fact. The judge reads JSON Lines (a resume context or a spill file) and
says which keys they hold: a summary line holds the keys in its carried fields,
a turn line holds the keys written in its content.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import attrs

from bench.sim.workload import KEY
from reducers import Node, SessionState


@attrs.frozen(kw_only=True)
class Obligation:
    """One live obligation: its kind, key, disposition (negative facts) and position."""

    kind: str  # call | constraint | negative
    key: str
    position: int
    disposition: str = ""


def live_obligations(state: SessionState) -> dict[str, Obligation]:
    """Every obligation live in ``state``, by key."""
    out = {
        c.call_id: Obligation(kind="call", key=c.call_id, position=c.position)
        for c in state.open_calls.values()
    }
    for con in state.constraints.values():
        out[con.key] = Obligation(kind="constraint", key=con.key, position=con.position)
    for d in state.dispositions.values():
        out[d.key] = Obligation(
            kind="negative", key=d.key, position=d.position, disposition=d.disposition
        )
    return out


def carried_by(node: Node) -> set[str]:
    """The keys a summary node carries in its fields."""
    return {*node.constraints, *node.dispositions, *node.resolved_ids, *node.unresolved_ids}


_CARRIED = ("constraints", "dispositions", "resolved_ids", "unresolved_ids")


def held_keys(content: str) -> set[str]:
    """The obligation keys a context or spill (JSON Lines) holds."""
    held: set[str] = set()
    for line in content.splitlines():
        if not line:
            continue
        item = json.loads(line)
        if item.get("kind") == "summary":
            for field in _CARRIED:
                held.update(item[field])
        else:
            held.update(KEY.findall(item["content"]))
    return held


def context_tokens(content: str, nodes: Mapping[str, Node]) -> int:
    """Tokens a context hands back: its turns', plus each summary node's own count."""
    total = 0
    for line in content.splitlines():
        if not line:
            continue
        item = json.loads(line)
        total += nodes[item["node_id"]].tokens if item.get("kind") == "summary" else item["tokens"]
    return total


def missing(live: Iterable[str], *held: set[str]) -> set[str]:
    """The live keys none of ``held`` holds."""
    return {k for k in live if not any(k in h for h in held)}
