"""Spill and resume-context bytes: what tierlog renders and hashes (storage: ``_spills``).

Both are JSON Lines of canonical JSON, so the same turns always give the same
bytes and the same sha256, on any run and machine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reducers import Node, canonical_json


def render_turns(turns: Iterable[Mapping[str, object]]) -> bytes:
    """Raw turns as JSON Lines: ``{"content", "index", "role", "tokens"}`` a line."""
    return b"".join(canonical_json(dict(t)) + b"\n" for t in turns)


def render_digest(nodes: Iterable[Node], tail: Iterable[Mapping[str, object]]) -> bytes:
    """A digest context: every live summary node, then the verbatim turns still resident."""
    lines = [
        canonical_json(
            {
                "kind": "summary",
                "node_id": n.node_id,
                "tier": n.tier,
                "covers": [n.covers_lo, n.covers_hi],
                "summary": n.summary,
                "dispositions": dict(n.dispositions),
                "constraints": list(n.constraints),
                "resolved_ids": list(n.resolved_ids),
                "unresolved_ids": list(n.unresolved_ids),
            }
        )
        for n in nodes
    ]
    lines += [canonical_json({"kind": "turn", **t}) for t in tail]
    return b"".join(line + b"\n" for line in lines)
