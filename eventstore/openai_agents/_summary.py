"""What a ``TierlogSession`` and its summarizer hand each other, as plain values.

A ``SummaryRequest`` is what a summarizer is asked to fold (the items, the retained
tail, every obligation the summary must carry); a ``Summary`` is its answer (the
text and what it claims to carry); ``Summarizer`` is the callable's type and
``SummarizerError`` what a raising summarizer becomes. ``check_claims`` refuses a
summary whose claims name something the session does not hold. No SDK, no journal:
``eventstore.openai_agents`` re-exports the public names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeAlias

import attrs

from eventstore.openai_agents._items import Item
from reducers import (
    InvalidEvent,
    JournalError,
    NegativeFact,
    OpenCall,
    PendingConstraint,
    SessionState,
)


def _ids(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        raise InvalidEvent(f"expected a sequence of ids, got the string {value!r}")
    return tuple(value)


def _dispositions(value: Mapping[str, str]) -> dict[str, str]:
    return dict(value)


@attrs.frozen(kw_only=True)
class Summary:
    """A summarizer's answer: the text, and what it carries.

    ``resolved_ids``/``unresolved_ids`` list the open calls it accounts for,
    ``constraints`` the pending constraint keys, ``dispositions`` the negative
    facts (key -> "rejected", "failed" or "superseded"). ``tokens`` defaults to an
    estimate of the summary item.
    """

    text: str = attrs.field(validator=attrs.validators.instance_of(str))
    resolved_ids: tuple[str, ...] = attrs.field(default=(), converter=_ids)
    unresolved_ids: tuple[str, ...] = attrs.field(default=(), converter=_ids)
    constraints: tuple[str, ...] = attrs.field(default=(), converter=_ids)
    # Out of the hash (a dict has none): equal summaries still hash alike.
    dispositions: Mapping[str, str] = attrs.field(factory=dict, converter=_dispositions, hash=False)
    tokens: int | None = None


@attrs.frozen(kw_only=True)
class SummaryRequest:
    """What a summarizer is asked to fold into one summary.

    ``items`` is the context the summary replaces, in order: the previous summary
    first (if any), then the raw items, reaching back far enough that the session's
    recovery floor is among them. ``retained`` is the tail kept verbatim after it.
    ``open_calls``, ``constraints`` and ``negative_facts`` are the obligations the
    summary must carry: an open call in ``resolved_ids`` or ``unresolved_ids``, a
    constraint key in ``constraints``, a negative fact in ``dispositions`` with its
    disposition. A summary that leaves one out is refused.
    """

    session_id: str
    items: tuple[Item, ...]
    retained: tuple[Item, ...]
    open_calls: tuple[OpenCall, ...]
    constraints: tuple[PendingConstraint, ...]
    negative_facts: tuple[NegativeFact, ...]

    def carry_all(self, text: str, *, tokens: int | None = None) -> Summary:
        """A summary of ``text`` that carries every obligation handed over (open calls
        as unresolved): for a summarizer whose prompt includes them all."""
        return Summary(
            text=text,
            unresolved_ids=[c.call_id for c in self.open_calls],
            constraints=[c.key for c in self.constraints],
            dispositions={f.key: f.disposition for f in self.negative_facts},
            tokens=tokens,
        )


class SummarizerError(JournalError):
    """The summarizer raised; nothing was written. Its exception is the ``__cause__``."""


Summarizer: TypeAlias = Callable[[SummaryRequest], Summary | Awaitable[Summary]]


def check_claims(state: SessionState, summary: Summary) -> None:
    """InvalidEvent unless every claim of ``summary`` is about something the session
    has: a call it saw (never both resolved and unresolved), a pending constraint, a
    negative fact with the disposition it was recorded with."""
    problems: list[str] = []
    unknown = [
        c for c in (*summary.resolved_ids, *summary.unresolved_ids) if c not in state.call_ids
    ]
    if unknown:
        problems.append(f"unknown call(s) {', '.join(map(repr, unknown))}")
    both = sorted(set(summary.resolved_ids) & set(summary.unresolved_ids))
    if both:
        problems.append(f"call(s) {', '.join(map(repr, both))} both resolved and unresolved")
    loose = [k for k in summary.constraints if k not in state.constraints]
    if loose:
        problems.append(f"no pending constraint(s) {', '.join(map(repr, loose))}")
    for key, disposition in summary.dispositions.items():
        fact = state.dispositions.get(key)
        if fact is None:
            problems.append(f"no negative fact {key!r}")
        elif fact.disposition != disposition:
            problems.append(f"negative fact {key!r} is {fact.disposition!r}, not {disposition!r}")
    if problems:
        raise InvalidEvent("the summary claims " + "; ".join(problems))
