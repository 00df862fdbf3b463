"""Ingest a Claude Code transcript as one journal session, through the public Session API.

The mapping (README, "Auditing real sessions"): reading is ``_claude_code``'s job,
the turns, tokens and events ``_ingest_plan``'s. Here the plan is written:

- each batch of turns with the events they raise through ``Session.extend``;
- a ``compact_boundary``: a tier-1 compaction over everything before it, its
  summary the text Claude Code resumed from, carrying what :mod:`_evidence` finds
  evidenced; then a marker on it. A refusal (C1-C5, M1-M3) is recorded, not raised.

Whether the session is new, unchanged, or a transcript that has grown since it was
ingested (its stored events a prefix of what the file now gives: the rest is
appended) is decided inside the write transaction, so two ingests of one file at
once both succeed.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from eventstore._journal import Journal
from eventstore._ops import carried_by
from eventstore._session import Session
from eventstore.claude_code import _transcript as cc
from eventstore.claude_code._plan import Plan, Retell, Step, build_plan, estimate
from eventstore.claude_code._review import CompactionReview, kept_by_claude_code, review_session
from invariants import MarkerInvalid, UnrecoverableCompactionError
from reducers import Event, InvalidArgument, InvalidEvent, SessionConfig, TurnAppended

FORMATS = ("claude-code",)
CONFIG = SessionConfig(
    window_tokens=200_000,  # Claude's context window
    trigger_tokens=160_000,
    truncator_unit="tokens",  # positions are token offsets: preTokens and occupancy compare
    floor_span=20_000,  # the last 20k tokens before a boundary must be in the summarizer's input
    floor_unit="tokens",  # the same unit as the truncator: C1 holds, C2 and C3 are judged
    on_unsafe="halt",  # the transcript is the raw copy: nothing is written outside the journal
)
_QUIET = logging.Logger("tierlog.ingest.scratch", level=logging.CRITICAL + 1)  # not registered


@attrs.frozen(kw_only=True)
class IngestResult:
    """What ingesting one transcript did, with the numbers a reviewer asks for first."""

    path: str
    session_id: str
    unchanged: bool  # the session was already there with exactly this content
    appended_after: int | None  # the grown transcript's new part went in after this version
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

    Ingesting a file again changes nothing (``unchanged``); a file that has grown
    since appends its new part (``appended_after``); a session id already holding
    other content raises InvalidEvent, as does a file that cannot be read.
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


def ingest_loaded(journal: Journal, loaded: Loaded, *, reviews: bool = True) -> IngestResult:
    """Write a loaded transcript as its session (see :func:`ingest`). ``reviews=False``
    leaves ``compactions`` empty (reviewing every compaction costs as much as a replay)."""
    plan, sid = loaded.plan, loaded.transcript.session_id
    fresh = None if not journal.has_session(sid) else _fresh(sid, plan)  # outside the lock
    with journal.recorder.transaction():
        stored = journal.recorder.head(sid).version
        if stored == 0:
            write(journal.start_session(sid, CONFIG), plan)
        else:
            _extend(journal, sid, plan, fresh or _fresh(sid, plan), loaded.path)
    return IngestResult(
        path=loaded.path,
        session_id=sid,
        unchanged=stored > 0 and journal.recorder.head(sid).version == stored,
        appended_after=stored if 0 < stored < journal.recorder.head(sid).version else None,
        events=journal.recorder.head(sid).version,
        turns=plan.turns,
        calls=plan.calls,
        failed=plan.failed,
        rejected=plan.rejected,
        interruptions=plan.interruptions,
        constraints=plan.constraints,
        queued=plan.queued,
        compactions=review_session(journal, sid) if reviews else (),
        warnings=loaded.transcript.warnings + tuple(plan.warnings),
    )


@attrs.frozen(kw_only=True)
class _Fresh:
    """What writing a plan into an empty session gives: each event's ``(type, payload)``
    and the session's version after each batch."""

    payloads: list[tuple[str, str]]
    ends: list[int]


def _fresh(sid: str, plan: Plan) -> _Fresh:
    with tempfile.TemporaryDirectory() as folder:
        scratch = Journal(Path(folder) / "scratch.db", synchronous="normal", snapshot_every=0)
        scratch.logger = _QUIET  # its refusals were logged when the session was first written
        with scratch:
            ends = write(scratch.start_session(sid, CONFIG), plan)
            return _Fresh(payloads=list(scratch.recorder.read_payloads(sid)), ends=ends)


def _extend(journal: Journal, sid: str, plan: Plan, fresh: _Fresh, path: str) -> None:
    """Append what the stored session lacks of ``fresh``: nothing when it is all there;
    InvalidEvent (writing nothing) when the stored events are not where it starts."""
    stored = list(journal.recorder.read_payloads(sid))
    if stored == fresh.payloads[: len(stored)]:
        if len(stored) < len(fresh.payloads):
            write(journal.session(sid), plan, done=len(stored), ends=fresh.ends)
        return
    pairs = enumerate(zip(stored, fresh.payloads, strict=False), 1)
    at = next((v for v, (a, b) in pairs if a != b), len(fresh.payloads) + 1)
    raise InvalidEvent(
        f"session {sid!r} already exists with other content (from version {at} on):"
        f" {path} is not ingested (if that session was read while Claude Code was writing"
        " a response, ingest the file into another journal)"
        if at <= len(fresh.payloads)
        else f"session {sid!r} already holds more than {path} gives (from version {at} on):"
        " it is not ingested"
    )


# -- writing -------------------------------------------------------------------------------
def write(session: Session, plan: Plan, *, done: int = 1, ends: Sequence[int] = ()) -> list[int]:
    """Append ``plan`` to ``session``; refusals are recorded, not raised. Returns the
    version after each batch. ``done``: the session's version, ``ends`` what this
    returned for the same plan on a fresh session: batches already stored are skipped."""
    out: list[int] = []
    for batch in _batches(plan.steps):
        begin = out[-1] if out else 1
        end = ends[len(out)] if len(out) < len(ends) else None
        if end is not None and end <= done:
            out.append(end)
            continue
        if isinstance(batch, cc.Boundary | Retell):
            if begin < done:
                raise InvalidEvent(f"line {batch.line}: the stored session ends inside it")
            if isinstance(batch, cc.Boundary):
                _compact(session, batch)
            else:
                _retell(session, batch)
        else:
            session.extend(batch[max(0, done - begin) :])
        out.append(session.version)
    return out


def _batches(steps: Sequence[Step]) -> Iterator[list[Event] | cc.Boundary | Retell]:
    events: list[Event] = []
    index = 0
    for step in steps:
        if isinstance(step, cc.Boundary | Retell):
            if events:
                yield events
            yield step
            events = []
            index += isinstance(step, Retell)
            continue
        events.append(
            TurnAppended(index=index, role=step.role, content=step.content, tokens=step.tokens)
        )
        events += step.raised
        index += 1
    if events:
        yield events


def _retell(session: Session, told: Retell) -> None:
    """A block tierlog's hooks gave the agent: the re-tell the journal owes at this point
    (``Session.retell``, cut to the block's length) when every line of it is in the
    block, so ``owed()`` knows the agent was told; otherwise (the block no longer states
    all that is owed, or nothing is owed) a plain ``system`` turn holding the block."""
    limit = len(told.text)
    with contextlib.suppress(InvalidArgument):  # not even the first owed line fits
        due = session.retell(max_chars=limit, dry_run=True)
        if due is not None and set(due.content.splitlines()) <= set(told.text.splitlines()):
            session.retell(max_chars=limit, tokens=told.tokens)
            return
    turn = TurnAppended(
        index=session.state.turns, role="system", content=told.text, tokens=told.tokens
    )
    session.extend([turn])


def _compact(session: Session, boundary: cc.Boundary) -> None:
    """The boundary's compaction over everything before it, and a marker on it. It carries
    what the summary evidences and what was raised in the turns Claude Code kept verbatim
    after it (``preservedSegment``): the context it resumed from holds both."""
    state = session.state
    carried = carried_by(state, boundary.summary)
    kept = kept_by_claude_code(state, boundary.kept)
    with contextlib.suppress(UnrecoverableCompactionError):
        node = session.compact(
            tier=1,
            input=(0, state.end),
            covers=(0, state.end),
            tail_start=state.end,
            summary=boundary.summary,
            tokens=estimate(boundary.summary),
            dispositions={**carried.dispositions, **kept.dispositions},
            unresolved_ids=sorted({*carried.calls, *kept.calls}),
            constraints=sorted({*carried.constraints, *kept.constraints}),
            replaces=[n.node_id for n in state.live_nodes],
        )
        with contextlib.suppress(MarkerInvalid):
            session.emit_marker(node.node_id)
