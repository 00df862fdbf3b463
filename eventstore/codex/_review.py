"""Compaction reviews of ingested Codex sessions, for ``audit`` and ``report``.

A session ``_ingest`` wrote is recognised by its turn 0 (``[codex rollout ...``). For
each compaction (committed or refused): the obligations live before it and raised
before its end, each judged evidenced or not by its summary (``_evidence``), and what
became of the marker on its node. Everything is read back from the journal's events,
so replay and ``verify`` see what a review reads. Registered as the ``codex`` reviewer
(entry-point group ``tierlog.reviewers``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import attrs

from eventstore._journal import Journal
from eventstore._ops import Carried, ReviewLine, carried_by
from reducers import (
    Compacted,
    CompactionRefused,
    Event,
    MarkerEmitted,
    MarkerInvalidated,
    MarkerRefused,
    SessionState,
    TurnAppended,
    apply,
)

PREAMBLE_START = "[codex rollout "
QUOTE_CHARS = 160
COLUMNS = ("version", "node_id", "occupancy", "turns_compacted", "summary_chars", "marker_status")


@attrs.frozen(kw_only=True)
class ObligationReview:
    """One obligation live at a compaction, and whether the summary evidences it."""

    kind: str  # open_call, constraint, negative_fact
    key: str
    detail: str
    raised_at_turn: int
    quote: str
    evidenced: bool

    def line(self) -> ReviewLine:
        """This judgement as a line of the review."""
        detail = "" if self.kind == "constraint" else f" ({self.detail})"
        return ReviewLine(
            ok=self.evidenced,
            verdict="evidenced" if self.evidenced else "NOT evidenced",
            subject=f"{self.kind} {self.key!r}{detail} at turn {self.raised_at_turn}",
            quote=self.quote,
        )


@attrs.frozen(kw_only=True)
class CompactionReview:
    """One compaction of an ingested rollout, as a reviewer reads it."""

    node_id: str
    version: int
    occupancy: int  # the journal's occupancy just before it
    turns_compacted: int
    summary_chars: int
    refused_rules: tuple[str, ...]
    marker_status: str  # emitted, refused, invalidated, none
    marker_rules: tuple[str, ...]
    obligations: tuple[ObligationReview, ...]

    @property
    def not_evidenced(self) -> tuple[ObligationReview, ...]:
        """The obligations the summary does not evidence."""
        return tuple(o for o in self.obligations if not o.evidenced)

    def headline(self) -> str:
        """Where the compaction stood and what became of its marker."""
        rules = f" ({','.join(self.marker_rules)})" if self.marker_rules else ""
        refused = f"refused ({','.join(self.refused_rules)})" if self.refused_rules else ""
        return (
            f"{self.node_id} (codex compacted): occupancy {self.occupancy:,}; compacted"
            f" {self.turns_compacted} turns; summary {self.summary_chars:,} chars;"
            f" {refused or 'marker ' + self.marker_status + rules}"
        )

    def lines(self) -> tuple[ReviewLine, ...]:
        """One line per obligation live at the compaction."""
        return tuple(o.line() for o in self.obligations)

    def columns(self) -> dict[str, object]:
        """The review's figures, for the report's table."""
        return {name: getattr(self, name) for name in COLUMNS}


def review_session(journal: Journal, session_id: str) -> tuple[CompactionReview, ...]:
    """Every compaction of a session ingested from a Codex rollout (none for another)."""
    if not journal.has_session(session_id):
        return ()
    session = journal.session(session_id)
    first = session.turns(0, 1)
    if not first or not first[0].content.startswith(PREAMBLE_START):
        return ()
    return tuple(_reviews(session.events()))


@attrs.define
class _Open:
    node_id: str
    version: int
    before: SessionState
    summary: str
    covers_hi: int
    refused: tuple[str, ...]
    turns: int  # turns appended since the compaction before
    status: str = "none"
    rules: list[str] = attrs.field(factory=list)


def _reviews(events: Iterable[Event]) -> Iterator[CompactionReview]:
    state = SessionState()
    turns: dict[int, str] = {}
    found: list[_Open] = []
    since = 0
    for version, event in enumerate(events, 1):
        if isinstance(event, TurnAppended):
            turns[event.index] = event.content
            since += 1
        elif isinstance(event, Compacted | CompactionRefused):
            proposal = event.proposal if isinstance(event, CompactionRefused) else event
            refused = tuple(sorted({v.rule for v in getattr(event, "violations", ())}))
            found.append(_open(proposal, version, state, refused, since))
            since = 0
        else:
            _follow(found, event)
        state = apply(state, event)
    for r in found:
        yield _finish(r, turns)


def _open(
    p: Compacted, version: int, state: SessionState, refused: tuple[str, ...], turns: int
) -> _Open:
    return _Open(
        turns=turns,
        node_id=p.node_id,
        version=version,
        before=state,
        summary=p.summary,
        covers_hi=p.covers_hi,
        refused=refused,
    )


def _follow(found: list[_Open], event: Event) -> None:
    """Note what became of each compaction's marker."""
    for r in found:
        if isinstance(event, MarkerEmitted) and event.node_id == r.node_id:
            r.status = "emitted"
        elif isinstance(event, MarkerRefused) and event.node_id == r.node_id:
            r.status, r.rules = "refused", sorted({v.rule for v in event.violations})
        elif isinstance(event, MarkerInvalidated) and r.status == "emitted":
            r.status, r.rules = "invalidated", [event.rule]


def _finish(r: _Open, turns: dict[int, str]) -> CompactionReview:
    state = r.before
    carried = carried_by(state, r.summary)
    return CompactionReview(
        node_id=r.node_id,
        version=r.version,
        occupancy=state.occupancy,
        turns_compacted=r.turns,
        summary_chars=len(r.summary),
        refused_rules=r.refused,
        marker_status=r.status,
        marker_rules=tuple(r.rules),
        obligations=tuple(_obligations(state, carried, r.covers_hi, turns)),
    )


def _obligations(
    state: SessionState, carried: Carried, hi: int, turns: dict[int, str]
) -> Iterator[ObligationReview]:
    """Each obligation raised before ``hi`` and live in ``state``, judged."""

    def review(
        kind: str, key: str, detail: str, position: int, ok: bool, reason: str = ""
    ) -> ObligationReview:
        at = state.turn_index(position) if position < state.end else state.turns - 1
        quote = " ".join((reason or turns.get(at, "")).split())[:QUOTE_CHARS]
        return ObligationReview(
            kind=kind, key=key, detail=detail, raised_at_turn=at, quote=quote, evidenced=ok
        )

    for k, c in sorted(state.constraints.items()):
        if c.position < hi:
            yield review("constraint", k, c.text, c.position, k in carried.constraints)
    for k, f in sorted(state.dispositions.items()):
        if f.position < hi:
            ok = carried.dispositions.get(k) == f.disposition
            yield review("negative_fact", k, f.disposition, f.position, ok, f.reason)
    for k, call in sorted(state.open_calls.items()):
        if call.position < hi:
            yield review("open_call", k, call.name, call.position, k in carried.calls)
