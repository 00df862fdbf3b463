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
import json
import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

import attrs

from eventstore._errors import ChainBroken
from eventstore._journal import Journal
from eventstore._session import Session
from eventstore.claude_code import _transcript as cc
from eventstore.claude_code._chain import Unresumable
from eventstore.claude_code._lines import MAX_BYTES, Source, open_regular
from eventstore.claude_code._plan import Plan, build_plan
from eventstore.claude_code._resume import (
    Position,
    Reread,
    Untrusted,
    check,
    position,
    recorded,
    reopens,
    vouch,
    vouch_last_call,
)
from eventstore.claude_code._resync import resync
from eventstore.claude_code._review import CompactionReview, review_session
from eventstore.claude_code._write import write
from reducers import Event, Ingested, InvalidEvent, Noted, SessionConfig

FORMATS = ("claude-code",)
INGESTED = "Ingested"
REREAD = "reread"  # the note that a file was read whole though a position was recorded
_REREAD = f'"kind":"{REREAD}"'
SNIFF_LINES = 20  # the sessionId to look the session up by: in the first lines
SNIFF_BYTES = 1 << 20
GUESS_BYTES = (1 << 16, 1 << 20)  # the sessionId the whole read gives: in the last lines
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


def ingest(
    journal: Journal,
    path: str | Path,
    format: str = "claude-code",  # noqa: A002
    *,
    reviews: bool = True,
) -> IngestResult:
    """Ingest the transcript at ``path`` as one session, in one transaction.

    Ingesting a file again changes nothing (``unchanged``); a file that has grown
    since appends its new part (``appended_after``), reading only that part when the
    session's last ingest position says where it starts (``_resume``); a session id
    already holding other content raises InvalidEvent, as does a file that cannot be
    read. ``reviews=False``: see :func:`ingest_loaded`.
    """
    return ingest_as(journal, path, None, format, reviews=reviews)


def ingest_as(
    journal: Journal,
    path: str | Path,
    session: str | None,
    format: str = "claude-code",  # noqa: A002
    *,
    reviews: bool = True,
) -> IngestResult:
    """:func:`ingest`; with ``session`` (the hooks' worker: the session Claude Code named),
    InvalidEvent, writing nothing, when the file is another session's transcript."""
    if format not in FORMATS:
        raise InvalidEvent(f"unknown format {format!r} (known: {', '.join(FORMATS)})")
    sid = session if session is not None else guess_session(path)
    at = last_position(journal, sid) if sid is not None else None
    reread, grew = "", False
    if at is not None:
        try:
            done = _incremental(journal, path, sid or "", at, reviews)
        except Reread as exc:
            reread = f"{Path(path).name} is not the file ingested before: {exc}"
        except Untrusted as exc:  # the file only grew (checked): a rewind is taken up
            reread = f"the resume record of the last ingest is not the session's: {exc}"
            grew = True
        except (Unresumable, _Moved):
            done, grew = None, True
        else:
            if done is not None:
                return done
            grew = True
    try:
        loaded = load(path, format)
        other = loaded.transcript.session_id
        if session is not None and other != session:
            raise InvalidEvent(
                f"{path} is the transcript of session {other!r}, not of session {session!r}"
                " (another session's file at its path): not ingested"
            )
        if other != sid:  # the position checked (if any) was another session's: check its own
            reread, grew = _only_grew(journal, path, other)
        return ingest_loaded(journal, loaded, reviews=reviews, reread=reread, grew=grew)
    except InvalidEvent as exc:
        if reread:  # why it was read whole is what the user needs to know first
            raise InvalidEvent(f"{reread}; read whole: {exc}") from exc
        raise


@attrs.frozen(kw_only=True)
class Loaded:
    """A transcript read and mapped, not yet written."""

    path: str
    transcript: cc.Transcript
    plan: Plan = attrs.field(eq=False)
    position: Ingested | None = attrs.field(default=None, eq=False)


def load(path: str | Path, format: str = "claude-code") -> Loaded:  # noqa: A002
    """Read and map the transcript at ``path`` (InvalidEvent naming the line if unsound)."""
    if format not in FORMATS:
        raise InvalidEvent(f"unknown format {format!r} (known: {', '.join(FORMATS)})")
    source = Source(path)
    transcript = cc.read_lines(source)
    plan = build_plan(transcript)
    position = recorded(source, transcript, plan)
    return Loaded(path=str(path), transcript=transcript, plan=plan, position=position)


def ingest_loaded(
    journal: Journal,
    loaded: Loaded,
    *,
    reviews: bool = True,
    reread: str = "",
    grew: bool = False,
) -> IngestResult:
    """Write a loaded transcript as its session (see :func:`ingest`). ``reviews=False``
    leaves ``compactions`` empty (reviewing every compaction costs as much as a replay).
    ``reread``: why the file was read whole though a position was recorded (a note);
    ``grew``: the file only grew since the position recorded (a rewound chain is taken
    up again, see ``_resync``)."""
    plan, sid = loaded.plan, loaded.transcript.session_id
    fresh = None
    if journal.has_session(sid):  # outside the lock
        fresh = _fresh(sid, plan, _slots(list(journal.recorder.read_payloads(sid))))
    with journal.recorder.transaction():
        stored = journal.recorder.head(sid).version
        if stored == 0:
            write(journal.start_session(sid, CONFIG), plan)
        else:
            note = Noted(kind=REREAD, text=reread) if reread else None
            _extend(journal, sid, plan, fresh, (loaded.path, note, grew))
        if _mark(journal, sid, loaded.position):
            _snapshot(journal, sid)
    return _result(journal, sid, stored, (loaded.path, loaded.transcript, plan), reviews)


def _result(
    journal: Journal,
    sid: str,
    stored: int,
    read: tuple[str, cc.Transcript, Plan],
    reviews: bool,
) -> IngestResult:
    path, transcript, plan = read
    now = journal.recorder.head(sid).version
    grew = stored > 0 and _content_after(journal, sid, stored)
    return IngestResult(
        path=path,
        session_id=sid,
        unchanged=stored > 0 and not grew,
        appended_after=stored if grew else None,
        events=now,
        turns=plan.turns,
        calls=plan.calls,
        failed=plan.failed,
        rejected=plan.rejected,
        interruptions=plan.interruptions,
        constraints=plan.constraints,
        queued=plan.queued,
        compactions=review_session(journal, sid) if reviews else (),
        warnings=transcript.warnings + tuple(plan.warnings),
    )


def _content_after(journal: Journal, sid: str, version: int) -> bool:
    """Whether the session holds events after ``version`` other than ingest positions."""
    rows = journal.recorder.read_payloads(sid, start=version + 1)
    return any(kind != INGESTED for kind, _ in rows)


def _mark(journal: Journal, sid: str, position: Ingested | None) -> bool:
    """Record where this ingest got to, unless the session ends with just that already;
    whether it did."""
    if position is None:
        return False
    head = journal.recorder.head(sid).version
    last = list(journal.recorder.read_payloads(sid, start=head))
    if last and last[0][0] == INGESTED and _decoded(last[0]) == position:
        return False
    journal.session(sid).extend([position])
    return True


def _snapshot(journal: Journal, sid: str, session: Session | None = None) -> None:
    """Save the session's state where the ingest left it: the next ingest of the file,
    which reads only its tail, starts from it instead of replaying the session."""
    if journal.snapshots.every:
        journal.snapshots.save(sid, (session or journal.session(sid)).state, None)


# -- reading only the tail -------------------------------------------------------------------
_Read = tuple[str, Noted | None, bool]  # the path, the note why it was read whole, grown


class _Moved(Exception):
    """The session changed between reading its position and writing the tail."""


def guess_session(path: str | Path) -> str | None:
    """The session reading the whole file most likely gives, to look its position up by
    (only a guess: the position's checks and the tail's own ``sessionId`` vouch for it):
    the ``sessionId`` of the last of the file's last lines that has one, as the main
    chain's last entry gives it (a resumed session's file starts with entries that keep
    the older session's id), else of the first of its first lines (``None``: none there,
    or the file cannot be read: the whole read says why)."""
    for window in GUESS_BYTES:
        try:
            with open_regular(path) as file:
                size = file.seek(0, 2)
                file.seek(max(0, size - window))
                lines = file.read(window).split(b"\n")
        except (InvalidEvent, OSError):
            return None
        for line in reversed(lines[1:] if size > window else lines):  # the first: cut
            if b'"sessionId"' in line:
                with contextlib.suppress(ValueError, AttributeError, RecursionError):
                    sid = json.loads(line).get("sessionId")  # a guess: the whole read checks
                    if isinstance(sid, str) and sid:
                        return sid
        if size <= window:
            break
    return sniff_session(path)


def _only_grew(journal: Journal, path: str | Path, sid: str) -> tuple[str, bool]:
    """For a file read whole as ``sid`` though another session's position was looked up
    (the guess was wrong): the ``reread`` note and whether the file only grew since
    ``sid``'s own position, as the position path gives them (``("", False)``: none)."""
    at = last_position(journal, sid)
    if at is None:
        return "", False
    try:
        checked = check(path, at, MAX_BYTES)
    except Reread as exc:
        return f"{Path(path).name} is not the file ingested before: {exc}", False
    if checked.tail is not None:
        checked.tail.close()
    return "", True


def sniff_session(path: str | Path) -> str | None:
    """The ``sessionId`` of the first of the file's first lines that has one (``None``:
    none there, or the file cannot be read: the whole read says why)."""
    try:
        with open_regular(path) as file:
            for _ in range(SNIFF_LINES):
                line = file.readline(SNIFF_BYTES)
                if not line:
                    return None
                with contextlib.suppress(ValueError):
                    sid = json.loads(line).get("sessionId")
                    if isinstance(sid, str) and sid:
                        return sid
    except (InvalidEvent, OSError, AttributeError):
        return None
    return None


def last_position(journal: Journal, sid: str) -> Position | None:
    """The session's position, if its last event is one (``_resume``)."""
    head = journal.recorder.head(sid).version
    if head == 0:
        return None
    rows = list(journal.recorder.read_payloads(sid, start=head))
    if not rows or rows[0][0] != INGESTED:
        return None
    event = _decoded(rows[0])
    assert isinstance(event, Ingested)
    return position(event, head, sid)


def _incremental(
    journal: Journal, path: str | Path, sid: str, at: Position, reviews: bool
) -> IngestResult | None:
    """Ingest what the file gained since ``at``: ``None`` when it must be read whole."""
    checked = check(path, at, MAX_BYTES)
    if checked.unchanged:
        return _unchanged(journal, sid, at, str(path), reviews)
    if at.malformed:  # the file is what was read (checked): the record is not
        if checked.tail is not None:
            checked.tail.close()
        raise Untrusted(f"it does not parse ({at.malformed})")
    if checked.tail is None or at.start is None or at.carried is None:
        return None
    session = journal.session(sid)
    try:
        if session.version != at.version:  # another ingest went on meanwhile
            raise _Moved
        vouch(at.carried, session.state)
        vouch_last_call(at.carried, session)
    except (_Moved, Untrusted):
        checked.tail.close()
        raise
    tail = cc.read_tail(checked.tail, at.start)
    before = attrs.evolve(at.carried, said=lambda: _said(session), asked=lambda: _asked(session))
    plan = build_plan(tail, before)
    if reopens(plan, session.state):
        raise Unresumable("the tail uses a call id the session holds: read whole")
    mark = recorded(checked.tail, tail, plan)
    with journal.recorder.transaction():
        if journal.recorder.head(sid).version != at.version:
            raise _Moved
        _write_tail(session, plan)
        if mark is not None:
            session.extend([mark])
        _snapshot(journal, sid, session)
    return _result(journal, sid, at.version, (str(path), tail, plan), reviews)


def _unchanged(journal: Journal, sid: str, at: Position, path: str, reviews: bool) -> IngestResult:
    counts = at.carried.counts if at.carried is not None else {}
    return IngestResult(
        path=path,
        session_id=sid,
        unchanged=True,
        appended_after=None,
        events=at.version,
        turns=counts.get("turns", 0),
        calls=counts.get("calls", 0),
        failed=counts.get("failed", 0),
        rejected=counts.get("rejected", 0),
        interruptions=counts.get("interruptions", 0),
        constraints=counts.get("constraints", 0),
        queued=counts.get("queued", 0),
        compactions=review_session(journal, sid) if reviews else (),
        warnings=(),
    )


def _said(session: Session) -> list[str]:
    """What the assistant wrote, as the journal holds it (a tail's rule finder asks)."""
    return [t.content for t in session.turns() if t.role == "assistant"]


def _asked(session: Session) -> list[str]:
    """What the user's turns say, as the journal holds them (a tail's rules ask, to check
    the files the resume record says the user named). A chain that breaks on the way (the
    record's own event edited, most likely) does not vouch for the record."""
    try:
        return [t.content for t in session.turns() if t.role == "user"]
    except ChainBroken as exc:
        raise Untrusted(f"the session's events do not verify: {exc}") from None


def _write_tail(session: Session, plan: Plan) -> None:
    """Append a tail's plan: its first notes, then its steps from the session's turn."""
    if plan.lead:
        session.extend(plan.lead)
    write(session, plan, index=session.state.turns)


@attrs.frozen(kw_only=True)
class _Fresh:
    """What writing a plan into an empty session gives, with the stored session's ingest
    positions at their versions: each event's ``(type, payload)`` and the session's
    version after each batch."""

    payloads: list[tuple[str, str]]
    ends: list[int]
    slots: dict[int, Event]


def _decoded(row: tuple[str, str]) -> Ingested | Noted:
    """A stored ``Ingested`` or ``Noted`` (flat events: their payload is their fields)."""
    kind, payload = row
    cls = Ingested if kind == INGESTED else Noted
    return cls(**json.loads(payload))


def _slots(rows: Sequence[tuple[str, str]]) -> dict[int, Event]:
    """What the ingest recorded of itself among a session's rows, by version: its
    positions, and its notes that it read a file whole (``reread``)."""
    slots: dict[int, Event] = {}
    for version, row in enumerate(rows, 1):
        if row[0] == INGESTED or (row[0] == "Noted" and _REREAD in row[1]):
            event = _decoded(row)
            if isinstance(event, Ingested) or getattr(event, "kind", "") == REREAD:
                slots[version] = event
    return slots


def _fresh(sid: str, plan: Plan, slots: dict[int, Event]) -> _Fresh:
    with tempfile.TemporaryDirectory() as folder:
        scratch = Journal(Path(folder) / "scratch.db", synchronous="normal", snapshot_every=0)
        scratch.logger = _QUIET  # its refusals were logged when the session was first written
        with scratch:
            ends = write(scratch.start_session(sid, CONFIG), plan, slots=slots)
            payloads = list(scratch.recorder.read_payloads(sid))
            return _Fresh(payloads=payloads, ends=ends, slots=slots)


def _extend(journal: Journal, sid: str, plan: Plan, fresh: _Fresh | None, read: _Read) -> None:
    """Append what the stored session lacks of what the plan gives (with the session's
    ingest positions where they are), after ``read``'s note if it adds anything: nothing
    when it is all there; InvalidEvent (writing nothing) when the stored events are not
    where it starts."""
    path, note, grew = read
    stored = list(journal.recorder.read_payloads(sid))
    slots = _slots(stored)
    if fresh is None or fresh.slots.keys() != slots.keys():
        fresh = _fresh(sid, plan, slots)
    if stored == fresh.payloads[: len(stored)]:
        session = journal.session(sid)
        if len(stored) < len(fresh.payloads):
            write(session, plan, done=len(stored), ends=fresh.ends, slots=slots)
        if note is not None:
            session.extend([note])
        return
    remap = not any(kind == INGESTED for kind, _ in stored)  # an older tierlog's session
    if resync(journal.session(sid), plan, stored, rewind=grew, remap=remap):
        if note is not None:  # a session taken up again is read whole for a reason too
            journal.session(sid).extend([note])
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
