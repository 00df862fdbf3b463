"""Ingest a Claude Code transcript as one journal session, through the public Session API.

The mapping (README, "Auditing real sessions"):

- turns: the main chain in file order (``_claude_code``); one API message is one
  turn. Turn 0 is a note standing for the system prompt and tool definitions, and
  the first turn after each compaction a note for what Claude Code re-sent then:
  neither is in the transcript, both take their tokens from the next API call.
- tokens: an assistant turn gets its message's ``output_tokens``; the turns
  between two API calls share the growth of the prompt between them
  (``prompt_k - occupancy``) in proportion to their size, so the journal's
  occupancy equals each call's prompt when it is sent. Turns after the last call
  get an estimate (4 characters a token). Every turn has at least one token.
- calls, results, rejections, interruptions, rules: see :func:`_plan_message`.
- a ``compact_boundary``: a tier-1 compaction over everything before it, its
  summary the text Claude Code resumed from, carrying what :mod:`_mention` finds
  evidenced; then a marker on it. A refusal (C1-C5, M1-M3) is recorded, not raised.
"""

from __future__ import annotations

import contextlib
import logging
import re
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from eventstore import _claude_code as cc
from eventstore._journal import Journal
from eventstore._mention import carried_by
from eventstore._review import CompactionReview, boundary_note, preamble, review_session
from eventstore._session import Session
from invariants import MarkerInvalid, UnrecoverableCompactionError
from reducers import (
    CallOpened,
    CallResolved,
    ConstraintStated,
    Event,
    InvalidEvent,
    ItemDisposed,
    SessionConfig,
    TurnAppended,
)

FORMATS = ("claude-code",)
CONFIG = SessionConfig(
    window_tokens=200_000,  # Claude's context window
    trigger_tokens=160_000,
    truncator_unit="tokens",  # positions are token offsets: preTokens and occupancy compare
    floor_span=20_000,  # the last 20k tokens before a boundary must be in the summarizer's input
    floor_unit="tokens",  # the same unit as the truncator: C1 holds, C2 and C3 are judged
    on_unsafe="halt",  # the transcript is the raw copy: nothing is written outside the journal
)
CHARS_PER_TOKEN = 4
REASON_CHARS = 200
_RULE = re.compile(r"\b(never|do not|don't|dont|always|must|only)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_QUIET = logging.Logger("tierlog.ingest.scratch", level=logging.CRITICAL + 1)  # not registered


@attrs.frozen(kw_only=True)
class IngestResult:
    """What ingesting one transcript did, with the numbers a reviewer asks for first."""

    path: str
    session_id: str
    unchanged: bool  # the session was already there with exactly this content
    events: int
    turns: int
    calls: int
    failed: int
    rejected: int
    interruptions: int
    constraints: int
    queued: int
    compactions: tuple[CompactionReview, ...]
    warnings: tuple[str, ...]


def ingest(journal: Journal, path: str | Path, format: str = "claude-code") -> IngestResult:  # noqa: A002
    """Ingest the transcript at ``path`` as one session, in one transaction.

    Ingesting a file again changes nothing (``unchanged``); a session id already
    holding other content raises InvalidEvent, as does a file that cannot be read.
    """
    return ingest_loaded(journal, load(path, format))


@attrs.frozen(kw_only=True)
class Loaded:
    """A transcript read and mapped, not yet written."""

    path: str
    transcript: cc.Transcript
    plan: Plan = attrs.field(eq=False)


def load(path: str | Path, format: str = "claude-code") -> Loaded:  # noqa: A002
    """Read and map the transcript at ``path`` (InvalidEvent naming the line if unsound)."""
    if format not in FORMATS:
        raise InvalidEvent(f"unknown format {format!r} (known: {', '.join(FORMATS)})")
    transcript = cc.read(path)
    return Loaded(path=str(path), transcript=transcript, plan=build_plan(transcript))


def ingest_loaded(journal: Journal, loaded: Loaded) -> IngestResult:
    """Write a loaded transcript as its session (see :func:`ingest`)."""
    plan, sid = loaded.plan, loaded.transcript.session_id
    unchanged = journal.has_session(sid)
    if unchanged:
        _check_same(journal, sid, plan, loaded.path)
    else:
        with journal.recorder.transaction():
            write(journal.start_session(sid, CONFIG), plan)
    return IngestResult(
        path=loaded.path,
        session_id=sid,
        unchanged=unchanged,
        events=journal.recorder.head(sid).version,
        turns=plan.turns,
        calls=plan.calls,
        failed=plan.failed,
        rejected=plan.rejected,
        interruptions=plan.interruptions,
        constraints=plan.constraints,
        queued=plan.queued,
        compactions=review_session(journal, sid),
        warnings=loaded.transcript.warnings + tuple(plan.warnings),
    )


def _check_same(journal: Journal, sid: str, plan: Plan, path: str | Path) -> None:
    """InvalidEvent unless the stored session is exactly what ``plan`` writes."""
    with tempfile.TemporaryDirectory() as folder:
        scratch = Journal(Path(folder) / "scratch.db", synchronous="normal", snapshot_every=0)
        scratch.logger = _QUIET  # its refusals were logged when the session was first written
        with scratch:
            write(scratch.start_session(sid, CONFIG), plan)
            ours = list(scratch.recorder.read_payloads(sid))
    theirs = list(journal.recorder.read_payloads(sid))
    if ours != theirs:
        at = next(
            (v for v, (a, b) in enumerate(zip(ours, theirs, strict=False), 1) if a != b),
            len(theirs) + 1,
        )
        raise InvalidEvent(
            f"session {sid!r} already exists with other content (from version {at} on):"
            f" {path} is not ingested"
        )


# -- the plan ------------------------------------------------------------------------------
@attrs.define
class Draft:
    """A turn to append and the events it raises; tokens are set by :func:`_spread`."""

    role: str
    content: str
    usage: cc.Usage | None = None
    sink: bool = False  # a note: takes what the next call's prompt holds beyond the others
    tokens: int = 0
    raised: list[Event] = attrs.field(factory=list)

    @property
    def estimate(self) -> int:
        """Tokens by the characters, for turns no usage block accounts for."""
        return estimate(self.content)


Step = Draft | cc.Boundary


@attrs.define
class Plan:
    """A transcript mapped onto journal steps, with its counts."""

    steps: list[Step] = attrs.field(factory=list)
    warnings: list[str] = attrs.field(factory=list)
    names: dict[str, str] = attrs.field(factory=dict)  # call id -> name
    open: set[str] = attrs.field(factory=set)
    last_call: str | None = None  # the last call since the user's last request
    turns: int = 0
    calls: int = 0
    failed: int = 0
    rejected: int = 0
    interruptions: int = 0
    constraints: int = 0
    queued: int = 0


def build_plan(transcript: cc.Transcript) -> Plan:
    """Turns with their tokens and raised events, and the boundaries between them. Pure."""
    plan = Plan()
    plan.steps.append(Draft(role="system", content=preamble(transcript.session_id), sink=True))
    for item in transcript.items:
        if isinstance(item, cc.Boundary):
            note = boundary_note(item.line, item.trigger, item.pre_tokens)
            plan.steps += [item, Draft(role="system", content=note, sink=True)]
        elif isinstance(item, cc.Queued):
            plan.queued += 1
            draft = Draft(role="user", content=item.text)
            _rules(plan, draft, item.text)
            plan.steps.append(draft)
        else:
            plan.steps.append(_plan_message(plan, item))
    _assign_tokens(plan.steps)
    plan.turns = sum(isinstance(s, Draft) for s in plan.steps)
    return plan


def _plan_message(plan: Plan, m: cc.Message) -> Draft:
    """One message as a turn. A ``tool_use`` opens a call named by its tool and short key;
    its ``tool_result`` resolves it, and an error result is a negative fact on that name:
    ``rejected`` when the user refused the call, ``failed`` otherwise. A user's
    "[Request interrupted by user" is a ``rejected`` fact on what it interrupted, and a
    sentence the user typed with never/do not/don't/always/must/only a pending rule."""
    draft = Draft(role=m.role, content=render(m.blocks), usage=m.usage)
    if m.typed:
        plan.last_call = None  # a new request: an interruption from now on is of its work
    for b in m.blocks:
        if isinstance(b, cc.ToolUse):
            _open(plan, draft, b, m.line)
        elif isinstance(b, cc.ToolResult):
            _result(plan, draft, b, m.line)
        elif b.kind == "text" and m.role == "user" and cc.INTERRUPTED_TEXT in b.text:
            plan.interruptions += 1
            key = f"interrupted: {plan.last_call or 'reply'}"
            reason = f"line {m.line}: {b.text.strip()}"
            draft.raised.append(ItemDisposed(key=key, disposition="rejected", reason=reason))
    if m.typed:
        _rules(plan, draft, "\n".join(b.text for b in m.blocks if isinstance(b, cc.Text)))
    return draft


def _open(plan: Plan, draft: Draft, b: cc.ToolUse, line: int) -> None:
    if b.id in plan.names:
        plan.warnings.append(f"line {line}: tool_use {b.id} appears twice; the first counts")
        return
    name = f"{b.name}: {b.key}" if b.key else b.name
    plan.names[b.id] = plan.last_call = name
    plan.open.add(b.id)
    plan.calls += 1
    draft.raised.append(CallOpened(call_id=b.id, kind="tool_call", name=name))


def _result(plan: Plan, draft: Draft, b: cc.ToolResult, line: int) -> None:
    if b.tool_use_id not in plan.open:
        plan.warnings.append(
            f"line {line}: tool_result for {b.tool_use_id}, which is not an open call: ignored"
        )
        return
    plan.open.discard(b.tool_use_id)
    outcome = "rejected" if b.rejected else "error" if b.is_error else "ok"
    draft.raised.append(CallResolved(call_id=b.tool_use_id, outcome=outcome))
    if b.is_error:
        plan.rejected += b.rejected
        plan.failed += not b.rejected
        reason = f"line {line}: {' '.join(b.text.split())}"[:REASON_CHARS]
        disposition = "rejected" if b.rejected else "failed"
        name = plan.names[b.tool_use_id]
        draft.raised.append(ItemDisposed(key=name, disposition=disposition, reason=reason))


def _rules(plan: Plan, draft: Draft, text: str) -> None:
    """Sentences that state a rule, as pending constraints (a heuristic: keys say so)."""
    for sentence in _SENTENCE.split(text):
        sentence = " ".join(sentence.split())
        if sentence and _RULE.search(sentence):
            plan.constraints += 1
            key = f"heuristic: {sentence[: cc.KEY_CHARS]}"
            draft.raised.append(ConstraintStated(key=key, text=sentence))


def render(blocks: Sequence[cc.Block]) -> str:
    """A message's blocks as the turn's text."""
    parts = []
    for b in blocks:
        if isinstance(b, cc.ToolUse):
            parts.append(f"[tool_use {b.id}] {b.name} {b.input}")
        elif isinstance(b, cc.ToolResult):
            flag = " rejected" if b.rejected else " error" if b.is_error else ""
            parts.append(f"[tool_result {b.tool_use_id}{flag}] {b.text}")
        elif b.kind == "text":
            parts.append(b.text)
        else:
            parts.append(f"[{b.kind}] {b.text}".rstrip())
    return "\n".join(parts)


# -- tokens ------------------------------------------------------------------------------
def _assign_tokens(steps: Sequence[Step]) -> None:
    """Give every draft its tokens (see the module doc). Occupancy is tracked as the
    journal computes it, so a turn's minimum of one token never accumulates."""
    occupancy, last = 0, None
    pending: list[Draft] = []
    for step in steps:
        if isinstance(step, cc.Boundary):
            _spread(pending, None)
            occupancy, pending, last = estimate(step.summary), [], None
            continue
        if step.usage is None:
            pending.append(step)
            continue
        grown = step.usage.prompt - occupancy
        if pending:
            _spread(pending, grown)
            occupancy += sum(d.tokens for d in pending)
        elif last is not None and grown > 0:  # nothing between two calls: the reply was longer
            last.tokens += grown
            occupancy += grown
        step.tokens = max(1, step.usage.output)
        occupancy += step.tokens
        pending, last = [], step
    _spread(pending, None)


def _spread(drafts: list[Draft], total: int | None) -> None:
    """Share ``total`` tokens among ``drafts`` (estimates when ``None``): notes take what
    the others' estimates leave, otherwise in proportion to size; at least 1 each."""
    if total is None:
        for d in drafts:
            d.tokens = d.estimate
        return
    sinks = [d for d in drafts if d.sink]
    others = [d for d in drafts if not d.sink]
    if sinks:
        for d in others:
            d.tokens = d.estimate
        for d in sinks:
            d.tokens = 1
        sinks[0].tokens = max(1, total - sum(d.estimate for d in others) - len(sinks) + 1)
        return
    weights = [d.estimate for d in others]
    shares = [max(1, total * w // sum(weights)) for w in weights]
    biggest = max(range(len(shares)), key=lambda i: shares[i])
    shares[biggest] = max(1, shares[biggest] + total - sum(shares))
    for d, share in zip(others, shares, strict=True):
        d.tokens = share


def estimate(text: str) -> int:
    """Tokens of ``text`` where no usage block says: 4 characters a token, at least 1."""
    return max(1, len(text) // CHARS_PER_TOKEN)


# -- writing -------------------------------------------------------------------------------
def write(session: Session, plan: Plan) -> None:
    """Append ``plan`` to a fresh ``session``; refusals are recorded, not raised."""
    for batch in _batches(plan.steps, session.state.turns):
        if isinstance(batch, cc.Boundary):
            _compact(session, batch)
        else:
            session.extend(batch)


def _batches(steps: Sequence[Step], index: int) -> Iterator[list[Event] | cc.Boundary]:
    events: list[Event] = []
    for step in steps:
        if isinstance(step, cc.Boundary):
            yield events
            yield step
            events = []
            continue
        events.append(
            TurnAppended(index=index, role=step.role, content=step.content, tokens=step.tokens)
        )
        events += step.raised
        index += 1
    if events:
        yield events


def _compact(session: Session, boundary: cc.Boundary) -> None:
    """The boundary's compaction over everything before it, and a marker on it."""
    state = session.state
    carried = carried_by(state, boundary.summary)
    with contextlib.suppress(UnrecoverableCompactionError):
        node = session.compact(
            tier=1,
            input=(0, state.end),
            covers=(0, state.end),
            tail_start=state.end,
            summary=boundary.summary,
            tokens=estimate(boundary.summary),
            dispositions=carried.dispositions,
            unresolved_ids=carried.calls,
            constraints=carried.constraints,
            replaces=[n.node_id for n in state.live_nodes],
        )
        with contextlib.suppress(MarkerInvalid):
            session.emit_marker(node.node_id)
