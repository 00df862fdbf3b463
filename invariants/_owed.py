"""What the working context owes: the live obligations it does not evidence. Pure.

The working context is the live summary nodes plus the resident turns (a
``system`` re-tell turn among them). An obligation is *owed* when none of them
holds it: its turn was truncated, folded into a node that dropped it, or taken out
of the context without a summary, and no resident re-tell states it. ``owed`` is
``context_gaps`` read for a runtime: each with what it says, where it was raised
and why it is owed, most needed first.
"""

from __future__ import annotations

import attrs

from invariants._context import Gap, context_gaps
from reducers import SessionState

KINDS = ("constraint", "negative_fact", "open_call")
WHY = ("truncated", "dropped", "never_summarised")
_KIND = {"constraint": "constraint", "negative fact": "negative_fact", "open call": "open_call"}


@attrs.frozen(kw_only=True)
class Owed:
    """A live obligation the working context does not evidence right now.

    ``text`` is what it says (a constraint's text, a negative fact's reason, a call's
    name); ``status`` is ``pending`` for a constraint, the disposition of a negative
    fact, ``open`` for a call (``call_kind`` says which). ``position`` and ``turn`` are
    where it was raised (the turn it follows; ``None`` before any turn), ``version``
    the event that raised it (0 if not known). ``why`` is ``truncated``, ``dropped``
    (by ``node_id``) or ``never_summarised`` (withdrawn from the context, or raised
    before any turn), and ``because`` says it in full.
    """

    kind: str
    key: str
    text: str
    status: str
    position: int
    turn: int | None
    version: int
    why: str
    because: str
    node_id: str | None = None
    call_kind: str | None = None

    @property
    def rank(self) -> int:
        """What an agent needs most first: pending constraints (0), rejected or failed
        approaches (1), open calls (2), superseded approaches (3)."""
        if self.kind == "constraint":
            return 0
        if self.kind == "open_call":
            return 2
        return 3 if self.status == "superseded" else 1


def owed(state: SessionState) -> tuple[Owed, ...]:
    """The live obligations the working context of ``state`` does not evidence, most
    needed first (see ``Owed.rank``), then by position and key: deterministic."""
    found = [_owed(state, gap) for gap in context_gaps(state)]
    return tuple(sorted(found, key=lambda o: (o.rank, o.position, o.key)))


def _owed(state: SessionState, gap: Gap) -> Owed:
    kind = _KIND[gap.kind]
    if kind == "constraint":
        con = state.constraints[gap.key]
        text, status, call_kind, version = con.text, "pending", None, con.version
    elif kind == "negative_fact":
        fact = state.dispositions[gap.key]
        text, status, call_kind, version = fact.reason, fact.disposition, None, fact.version
    else:
        call = state.open_calls[gap.key]
        text, status, call_kind, version = call.name, "open", call.kind, call.version
    return Owed(
        kind=kind,
        key=gap.key,
        text=text,
        status=status,
        position=gap.position,
        turn=_turn(state, gap.position, version),
        version=version,
        why=gap.cause,
        because=gap.why,
        node_id=gap.node_id,
        call_kind=call_kind,
    )


def _turn(state: SessionState, position: int, version: int) -> int | None:
    """The turn an obligation raised at ``position`` by event ``version`` follows: the
    last turn appended before it (of several zero-token turns starting there, the last
    one older than the event), ``None`` if there is none."""
    versions = state.turn_versions
    before = [i for i in state.turns_at(position) if not version or versions[i] < version]
    return before[-1] if before else None
