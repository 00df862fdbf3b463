"""What a summary node claims to carry, kept honest as the ledger moves on. Pure.

A node lists constraint keys; it carries a constraint only with the text it saw
when it was committed. The fold keeps, per node, the keys whose live text it did
not see (``Node.stale_constraints``): listed while not pending, or restated with
another text since (a lift ends a statement, so a restatement after a lift is never
carried by an older node). Nodes whose claims stay true keep nothing, so a journal
that never restates a carried constraint hashes as it did before the check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from reducers._state import NegativeFact, Node, OpenCall, PendingConstraint, constraint_digest


def required_at_commit(
    open_calls: Iterable[OpenCall],
    constraints: Iterable[PendingConstraint],
    dispositions: Iterable[NegativeFact],
    covers_lo: int,
    covers_hi: int,
) -> dict[str, Any]:
    """What a node committed now over ``[covers_lo, covers_hi)`` must carry (M1, M2)."""
    return {
        "required_calls": tuple(sorted(c.call_id for c in open_calls if c.position < covers_hi)),
        "required_constraints": tuple(sorted(c.key for c in constraints if c.position < covers_hi)),
        "required_dispositions": {
            d.key: d.disposition
            for d in sorted(dispositions, key=lambda d: d.key)
            if covers_lo <= d.position < covers_hi
        },
    }


def stale_at_commit(
    listed: Iterable[str], pending: Mapping[str, PendingConstraint]
) -> dict[str, str]:
    """The listed keys a new node cannot carry: no constraint of that key is pending."""
    return {key: "" for key in sorted(set(listed)) if key not in pending}


def restated(
    nodes: Iterable[Node], key: str, before: PendingConstraint | None, text: str
) -> list[Node]:
    """The live nodes listing ``key`` whose claim changes when it is stated as ``text``
    (``before``: the statement pending until now, if any), as they are after it."""
    new = constraint_digest(key, text)
    old = before.digest if before is not None else None
    if old == new:
        return []  # the same text again: every claim means what it meant
    out = []
    for node in nodes:
        if not node.live or key not in node.constraints:
            continue
        seen = "" if old is None else node.stale_constraints.get(key, old)
        stale = {k: v for k, v in node.stale_constraints.items() if k != key}
        if seen != new:
            stale[key] = seen
        if stale != node.stale_constraints:
            out.append(attrs.evolve(node, stale_constraints=stale))
    return out
