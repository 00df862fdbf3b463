"""Compaction reviews of ingested sessions: what each summary evidences, in a minute.

An ingested session (see ``_ingest``) is recognised by the note in its turn 0;
the note in the first turn after each compaction records the transcript line,
trigger and ``preTokens`` of its ``compact_boundary``. Both are ordinary turns,
so replay and ``verify`` re-derive everything a review reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import attrs

from eventstore._journal import Journal
from eventstore._ops import Carried, ReviewLine, resolved_later
from eventstore.claude_code._verdicts import GivenBack as GivenBack
from eventstore.claude_code._verdicts import ObligationReview as ObligationReview
from eventstore.claude_code._verdicts import plural
from invariants import carries_call
from reducers import (
    Compacted,
    CompactionRefused,
    ConstraintStated,
    Event,
    MarkerEmitted,
    MarkerInvalidated,
    MarkerRefused,
    Retold,
    SessionState,
    TurnAppended,
    fold,
)

PREAMBLE = "[claude-code transcript {session_id}]"
PREAMBLE_TAIL = (
    " The system prompt and tool definitions Claude Code sent with the first API call:"
    " not in the transcript; their tokens are counted in that call's turn."
)
NOTE_PREFIX = "[claude-code compact_boundary] "
NOTE_TAIL = (
    "\nWhat the first API call after it was sent besides the summary (system prompt, tools,"
    " files Claude Code re-read): not in the transcript; its tokens are counted in that"
    " call's turn."
)
_NOTE_KEYS = frozenset({"line", "preTokens", "trigger"})
QUOTE_CHARS = 160


def preamble(session_id: str) -> str:
    """Turn 0 of an ingested session."""
    return PREAMBLE.format(session_id=session_id) + PREAMBLE_TAIL


def boundary_note(line: int, trigger: str, pre_tokens: int | None, kept: int = 0) -> str:
    """The first turn after an ingested compaction: a prefix, the boundary's fields as
    canonical JSON on the first line (so no trigger text can pass for another field),
    then what the turn stands for. ``kept``: the turns before the boundary Claude Code
    kept verbatim after the summary (``keptTurns``, written only when there are some)."""
    fields: dict[str, object] = {"line": line, "preTokens": pre_tokens, "trigger": trigger}
    if kept:
        fields["keptTurns"] = kept
    return NOTE_PREFIX + json.dumps(fields, sort_keys=True) + NOTE_TAIL


def is_ingested(first_turn: str) -> bool:
    """Whether a session whose turn 0 reads ``first_turn`` was ingested from Claude Code."""
    return first_turn.startswith("[claude-code transcript ") and first_turn.endswith(PREAMBLE_TAIL)


@attrs.frozen(kw_only=True)
class BoundaryNote:
    """What the note after a compaction records of its ``compact_boundary``."""

    line: int
    trigger: str
    pre_tokens: int | None
    kept: int = 0


def read_boundary_note(content: str) -> BoundaryNote | None:
    """The boundary a post-compaction turn describes, or ``None`` for any other turn:
    only a text :func:`boundary_note` writes, byte for byte, is read as one."""
    head, _, _ = content.partition("\n")
    if not head.startswith(NOTE_PREFIX):
        return None
    try:
        fields = json.loads(head[len(NOTE_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(fields, dict) or fields.keys() - {"keptTurns"} != _NOTE_KEYS:
        return None
    line, pre, trigger = fields["line"], fields["preTokens"], fields["trigger"]
    kept = fields.get("keptTurns", 0)
    if type(line) is not int or not (pre is None or type(pre) is int) or type(trigger) is not str:
        return None
    if type(kept) is not int or content != boundary_note(line, trigger, pre, kept):
        return None
    return BoundaryNote(line=line, trigger=trigger, pre_tokens=pre, kept=kept)


def kept_by_claude_code(state: SessionState, kept: int) -> Carried:
    """What the last ``kept`` turns of ``state`` raised and still owe: Claude Code kept
    those turns verbatim after its summary, so the context it resumed from holds them."""
    if not kept:
        return Carried(calls=(), constraints=(), dispositions={})
    start = state.position_of_turn(state.turns - kept)
    return Carried(
        calls=tuple(sorted(c.call_id for c in state.open_calls.values() if c.position >= start)),
        constraints=tuple(sorted(k.key for k in state.constraints.values() if k.position >= start)),
        dispositions={
            k: d.disposition for k, d in sorted(state.dispositions.items()) if d.position >= start
        },
    )


@attrs.frozen(kw_only=True)
class CompactionReview:
    """One compaction of an ingested session, as a reviewer reads it."""

    node_id: str
    version: int
    line: int | None
    trigger: str | None
    pre_tokens: int | None
    occupancy: int  # the journal's occupancy just before the compaction
    turns_compacted: int  # resident turns the summary replaced
    tokens_compacted: int  # resident tokens it replaced (live summaries included)
    summary_chars: int
    summary_tokens: int
    refused_rules: tuple[str, ...]  # C1-C5 when the compaction itself was refused
    marker_id: str | None
    marker_status: str  # emitted (still valid), refused, invalidated (later), none
    marker_rules: tuple[str, ...]  # why it was refused or invalidated
    obligations: tuple[ObligationReview, ...]

    @property
    def not_evidenced(self) -> tuple[ObligationReview, ...]:
        """The obligations the resumed context does not hold: neither the summary nor the
        turns Claude Code kept or re-sent (an attempt resolved later is owed no more)."""
        return tuple(o for o in self.obligations if not o.carried)

    def headline(self) -> str:
        """Where the compaction stood, what it replaced, and what became of its marker."""
        pre = self.pre_tokens
        drift = f" ({(self.occupancy - pre) / pre:+.2%})" if pre else ""
        where = f" at line {self.line} ({self.trigger})" if self.line is not None else ""
        return (
            f"{self.node_id}{where}: preTokens {'unknown' if pre is None else format(pre, ',')},"
            f" occupancy {self.occupancy:,}{drift};"
            f" compacted {plural(self.turns_compacted, 'turn')},"
            f" {self.tokens_compacted:,} tokens; summary {self.summary_chars:,} chars,"
            f" {self.summary_tokens:,} tokens; {self._marker()}{self._given()}"
        )

    def _given(self) -> str:
        dropped, given = len(self.not_evidenced), len(self.given_back)
        return f"; given back: {given} of {dropped} not evidenced" if given else ""

    @property
    def given_back(self) -> tuple[ObligationReview, ...]:
        """The obligations not evidenced that a re-tell gave back before the next compaction."""
        return tuple(o for o in self.not_evidenced if o.given_back is not None)

    def _marker(self) -> str:
        rules = f" ({','.join(self.marker_rules)})" if self.marker_rules else ""
        if self.refused_rules:
            return f"compaction refused ({','.join(self.refused_rules)})"
        if self.marker_id is None:
            return "no marker"
        return f"marker {self.marker_id} {self.marker_status}{rules}"

    def lines(self) -> tuple[ReviewLine, ...]:
        """One line per obligation live at the compaction."""
        return tuple(o.line() for o in self.obligations)

    def columns(self) -> dict[str, object]:
        """The review's figures, for the report's table."""
        return {name: getattr(self, name) for name in COLUMNS}


COLUMNS = (
    "version",
    "node_id",
    "trigger",
    "pre_tokens",
    "occupancy",
    "turns_compacted",
    "tokens_compacted",
    "summary_chars",
    "summary_tokens",
    "marker_id",
    "marker_status",
    "marker_rules",
)


def review_session(journal: Journal, session_id: str) -> tuple[CompactionReview, ...]:
    """Every compaction of an ingested session (none for any other session)."""
    first = next(journal.recorder.turn_payloads(session_id, 1, 3), None)
    if first is None or not is_ingested(str(json.loads(first).get("content"))):
        return ()
    return tuple(_reviews(journal.session(session_id).events()))


@attrs.define
class _Open:
    """A review still collecting the marker and boundary note that follow its compaction."""

    proposal: Compacted
    version: int
    before: SessionState
    refused: tuple[str, ...]
    note: BoundaryNote | None = None
    looked: bool = False  # the turn after the compaction was read for its note
    marker_id: str | None = None
    marker_status: str = "none"
    marker_rules: list[str] = attrs.field(factory=list)
    retold: list[tuple[int, Retold]] = attrs.field(factory=list)  # before the next compaction
    resent: dict[str, int] = attrs.field(factory=dict)  # rules re-sent before the first reply
    replied: bool = False  # an assistant turn came after the compaction
    instructions: bool = False  # the last turn holds files Claude Code sent (CLAUDE.md)


def _reviews(events: Iterable[Event]) -> Iterator[CompactionReview]:
    state = SessionState()
    pending: list[Event] = []
    turns: dict[int, str] = {}
    reviews: list[_Open] = []
    for version, event in enumerate(events, 1):
        if isinstance(event, TurnAppended):
            turns[event.index] = event.content
        if isinstance(event, Retold) and reviews:
            reviews[-1].retold.append((version, event))
        if isinstance(event, Compacted | CompactionRefused):
            state = fold(pending, state)
            pending = []
            refused = (
                tuple(sorted({v.rule for v in event.violations}))
                if isinstance(event, CompactionRefused)
                else ()
            )
            proposal = event.proposal if isinstance(event, CompactionRefused) else event
            reviews.append(_Open(proposal=proposal, version=version, before=state, refused=refused))
        elif reviews:
            _follow(reviews, event, version)
        pending.append(event)
    for r in reviews:
        yield _finish(r, turns)


def _follow(reviews: list[_Open], event: Event, version: int) -> None:
    last = reviews[-1]
    if isinstance(event, TurnAppended) and not last.looked:  # the note is the next turn
        last.looked = True
        last.note = read_boundary_note(event.content) if event.role == "system" else None
    _resend(last, event, version)
    by_node = {r.proposal.node_id: r for r in reviews}
    if isinstance(event, MarkerEmitted | MarkerRefused) and event.node_id in by_node:
        r = by_node[event.node_id]
        r.marker_id = event.marker_id
        r.marker_status = "emitted" if isinstance(event, MarkerEmitted) else "refused"
        if isinstance(event, MarkerRefused):
            r.marker_rules += sorted({v.rule for v in event.violations})
    if isinstance(event, MarkerInvalidated):
        for r in reviews:
            if r.marker_id == event.marker_id:
                r.marker_status = "invalidated"
                r.marker_rules.append(event.rule)


def _resend(r: _Open, event: Event, version: int) -> None:
    """Note the rules of files Claude Code re-sent after the compaction, before the
    first reply (its ``instructions`` attachment: CLAUDE.md, memory files)."""
    if isinstance(event, TurnAppended):
        r.replied = r.replied or event.role == "assistant"
        r.instructions = event.role != "assistant" and event.content.startswith("Contents of ")
    elif isinstance(event, ConstraintStated) and r.instructions and not r.replied:
        r.resent.setdefault(event.key, version)


def _finish(r: _Open, turns: dict[int, str]) -> CompactionReview:
    before, p = r.before, r.proposal
    return CompactionReview(
        node_id=p.node_id,
        version=r.version,
        line=r.note.line if r.note else None,
        trigger=r.note.trigger if r.note else None,
        pre_tokens=r.note.pre_tokens if r.note else None,
        occupancy=before.occupancy,
        turns_compacted=before.turn_index(p.covers_hi) - before.turn_index(before.tail_start),
        tokens_compacted=before.occupancy,
        summary_chars=len(p.summary),
        summary_tokens=p.tokens,
        refused_rules=r.refused,
        marker_id=r.marker_id,
        marker_status=r.marker_status,
        marker_rules=tuple(r.marker_rules),
        obligations=tuple(
            _given_back(r, attrs.evolve(o, resent=r.resent.get(o.key)))
            if o.kind == "constraint"
            else _given_back(r, o)
            for o in _obligations(before, p, turns, r.note.kept if r.note else 0)
        ),
    )


def _given_back(r: _Open, o: ObligationReview) -> ObligationReview:
    """``o`` with the first re-tell after its compaction that stated it, if it is dropped."""
    if o.carried:
        return o
    for version, told in r.retold:
        named = {
            "constraint": told.constraints,
            "negative_fact": told.dispositions,
            "open_call": told.calls,
        }[o.kind]
        if o.key in named:
            after = told.index - r.before.turns - 1  # the boundary note is turn before.turns
            given = GivenBack(version=version, turn=told.index, turns_after=max(0, after))
            return attrs.evolve(o, given_back=given)
    return o


def _obligations(
    state: SessionState, p: Compacted, turns: dict[int, str], kept: int
) -> Iterator[ObligationReview]:
    verbatim = kept_by_claude_code(state, kept)
    for o in _judged(state, p, turns):
        if o.key in (*verbatim.calls, *verbatim.constraints, *verbatim.dispositions):
            o = attrs.evolve(o, kept_verbatim=True)
        yield o


def _judged(state: SessionState, p: Compacted, turns: dict[int, str]) -> Iterator[ObligationReview]:
    for c in sorted(state.open_calls.values(), key=lambda c: c.position):
        at = state.turn_index(c.position)
        yield ObligationReview(
            kind="open_call",
            key=c.call_id,
            detail=c.name,
            raised_at_turn=at,
            quote=_line_with(turns.get(at, ""), c.call_id),
            evidenced=carries_call(p, c.call_id),
        )
    for k in sorted(state.constraints.values(), key=lambda k: k.position):
        yield ObligationReview(
            kind="constraint",
            key=k.key,
            detail=k.text,
            raised_at_turn=state.turn_index(k.position),
            quote=_short(k.text),
            evidenced=k.key in p.constraints,
        )
    for d in sorted(state.dispositions.values(), key=lambda d: d.position):
        yield ObligationReview(
            kind="negative_fact",
            key=d.key,
            detail=d.disposition,
            raised_at_turn=state.turn_index(d.position),
            quote=_short(d.reason),
            evidenced=p.dispositions.get(d.key) == d.disposition,
            resolved_later=resolved_later(d.disposition, d.reason),
        )


def _line_with(content: str, needle: str) -> str:
    line = next((x for x in content.splitlines() if needle in x), content)
    return _short(line)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 3] + "..."
