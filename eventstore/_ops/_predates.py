"""Which later rule a recorded decision predates: the hint a divergence message ends with.

A journal written by an older tierlog was honest under the rules of its day. Where
today's rules decide an event differently, ``verify`` names the first such version
and, when the difference is one of these rules, says which:

- 0.2, live obligations: a marker whose digest context lacks a live obligation is
  invalidated (journals of 0.1 predate it);
- 0.2, claims checked against the ledger (issue 22): a node listing as resolved a
  call the log holds open is refused (``false_closure``) and carries nothing, a
  constraint counts as carried only with the text the node saw;
- 0.2, marker-refusal spills (issue 22): under ``on_unsafe="spill"`` a refused
  marker first spills the raw turns that hold what its node dropped.
"""

from __future__ import annotations

from collections.abc import Iterator

from reducers import (
    CompactionRefused,
    Event,
    MarkerInvalidated,
    MarkerRefused,
    Violation,
)

#: Words only a claim check writes (see ``invariants._claims`` and ``_context._falsely``).
CLAIM_WORDS = (
    "false_closure",
    "carries another text of it",
    "lists it as resolved while the log holds it open",
)

LIVE_OBLIGATIONS = (
    "Since tierlog 0.2 a marker whose digest lacks a live obligation is invalidated"
    " here; a journal written by 0.1 that reached this state was honest but unsafe to"
    " resume from its digest"
)
CLAIMS = (
    "Since tierlog 0.2 a node's claims are checked against the ledger: a call listed as"
    " resolved while the log holds it open is refused (M1 false_closure) and carries"
    " nothing, and a constraint counts as carried only with the text the node saw; a"
    " journal written before that rule recorded this decision by key alone"
)
MARKER_SPILLS = (
    "Since tierlog 0.2 a refused marker of a session with on_unsafe='spill' first spills"
    " the raw turns that hold what its node dropped; a journal written before that rule"
    " recorded the refusal alone"
)


def hint(recorded: list[Event], derived: tuple[Event, ...]) -> str:
    """The rule a recorded command predates, as the tail of a divergence message."""
    claims = next((text for text in _texts(derived) if _is_claim(text)), None)
    if claims is not None and not any(_is_claim(t) for t in _texts(tuple(recorded))):
        return f" ({claims}). {CLAIMS}"
    return _live_obligation(recorded, derived)


def spill_hint(recorded: list[Event]) -> str:
    """The hint when a refused marker's spill is due but none was recorded."""
    if len(recorded) == 1 and isinstance(recorded[0], MarkerRefused):
        return f". {MARKER_SPILLS}"
    return ""


def _live_obligation(recorded: list[Event], derived: tuple[Event, ...]) -> str:
    """A hint when the difference is the live-obligation rule journals of 0.1 predate."""
    extra = derived[len(recorded) :]
    lost = [e for e in extra if isinstance(e, MarkerInvalidated) and "digest context" in e.reason]
    if list(derived[: len(recorded)]) != recorded or not lost or len(lost) != len(extra):
        return ""
    return f" ({lost[0].reason}). {LIVE_OBLIGATIONS}"


def _is_claim(text: str) -> bool:
    return any(word in text for word in CLAIM_WORDS)


def _texts(events: tuple[Event, ...]) -> Iterator[str]:
    """The violations and invalidation reasons ``events`` record, as text."""
    for e in events:
        if isinstance(e, MarkerInvalidated):
            yield e.reason
        elif isinstance(e, (CompactionRefused, MarkerRefused)):
            yield from map(_violation, e.violations)


def _violation(v: Violation) -> str:
    return f"{v.rule} {v.name}: {v.message}"
