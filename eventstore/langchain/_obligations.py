"""What a LangChain summary must carry, and the blocks that tell it. Pure.

``owed`` gathers the live obligations a compaction folds away (raised before its
tail): pending rules, negative facts, open calls. ``hints`` is what the summarizer
is told before it writes; ``violations_hint`` what it is told when a first summary
was refused; ``retell_block`` what is appended to a summary that still drops
something. One line per obligation, worded so that the mention rule
(``_evidence``) finds it: a rule quoted whole, a negative fact's short
key beside its disposition, an open call by its id.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from eventstore._ops import Carried
from invariants import Violation
from reducers import NegativeFact, OpenCall, PendingConstraint, SessionState

REASON_CHARS = 160
HINTS_HEAD = (
    "<tierlog_obligations>\nThe history you summarize holds these obligations, and the"
    " summary replaces it: state each one in the summary, rules word for word, failed or"
    " rejected actions with the word failed or rejected, open calls by their id."
)
HINTS_TAIL = "</tierlog_obligations>"
RETELL_HEAD = "[tierlog] Still in force from the summarized history:"


@attrs.frozen(kw_only=True)
class Owed:
    """The live obligations raised before a compaction's tail, most needed first."""

    constraints: tuple[PendingConstraint, ...] = ()
    facts: tuple[NegativeFact, ...] = ()
    calls: tuple[OpenCall, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.constraints or self.facts or self.calls)


def owed(state: SessionState, tail_start: int) -> Owed:
    """The obligations of ``state`` raised before ``tail_start`` and still live."""
    return Owed(
        constraints=tuple(
            c for _, c in sorted(state.constraints.items()) if c.position < tail_start
        ),
        facts=tuple(f for _, f in sorted(state.dispositions.items()) if f.position < tail_start),
        calls=tuple(c for _, c in sorted(state.open_calls.items()) if c.position < tail_start),
    )


def lines(due: Owed) -> list[str]:
    """One line per obligation (see the module doc)."""
    out = [f"- rule: {c.text}" for c in due.constraints]
    out += [f"- {f.disposition}: {f.key} ({_short(f.reason)})" for f in due.facts]
    out += [f"- open call {c.call_id}: {c.name} (no result yet)" for c in due.calls]
    return out


def hints(due: Owed) -> str:
    """What the summarizer is told before it writes; empty when nothing is owed."""
    if not due:
        return ""
    return "\n".join([HINTS_HEAD, *lines(due), HINTS_TAIL])


def violations_hint(due: Owed, violations: Iterable[Violation]) -> str:
    """The hints again, with why the first summary was refused."""
    why = [f"- {v.rule} {v.name}: {v.message}" for v in violations]
    refused = "Your previous summary was refused because it dropped obligations:"
    return "\n".join([hints(due), refused, *why])


def retell_block(due: Owed) -> str:
    """The block appended to a summary that drops what ``due`` holds.

    Kept to this one function so it can become ``Session.retell``'s wording."""
    return "\n".join([RETELL_HEAD, *lines(due)])


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= REASON_CHARS else flat[: REASON_CHARS - 3] + "..."


def not_carried(due: Owed, carried: Carried) -> Owed:
    """What of ``due`` a summary that evidences ``carried`` leaves out."""
    return Owed(
        constraints=tuple(c for c in due.constraints if c.key not in carried.constraints),
        facts=tuple(f for f in due.facts if carried.dispositions.get(f.key) != f.disposition),
        calls=tuple(c for c in due.calls if c.call_id not in carried.calls),
    )
