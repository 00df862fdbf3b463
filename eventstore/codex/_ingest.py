"""Write a Codex rollout as one journal session, through the public Session API.

``load`` reads and maps a rollout (``_rollout``, ``_plan``); ``write`` appends its
turns and raised events through ``Session.extend`` and makes each ``compacted`` a
tier-1 compaction over everything before it, carrying what its summary evidences
(``_evidence``), then a marker on it: a refusal (C1-C5, M1-M3) is recorded, not raised.
Ingesting a rollout again changes nothing; a rollout that has grown since (its stored
turns the start of what the file now gives) gets the rest appended, and the notes of
the lines it gained that the stored turns do not hold yet before it; any other content
under the same session id is refused. All of it in one transaction. Every note is a
``Noted`` event after the turn read before its line (``audit`` and ``report`` show
them), and travels in the result too (``notes``, ``warnings``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import attrs

from eventstore._journal import Journal
from eventstore._ops import carried_by
from eventstore._session import Session
from eventstore.codex._plan import Boundary, Mapped, Step, Turn, build_plan, estimate
from eventstore.codex._review import CompactionReview, review_session
from eventstore.codex._rollout import read
from eventstore.codex._values import Note
from invariants import MarkerInvalid, UnrecoverableCompactionError
from reducers import Event, InvalidEvent, Noted, SessionConfig, TurnAppended

SNIFF_BYTES = 1 << 20  # a session_meta line carries the base instructions: ~20 kB
_META_HEAD = re.compile(
    rb'\s*\{\s*(?:"timestamp"\s*:\s*"[^"]*"\s*,\s*)?"type"\s*:\s*"session_meta"'
)
WINDOW = 272_000  # when no token_count says the model's window


@attrs.frozen(kw_only=True)
class IngestResult:
    """What ingesting one rollout did, with the numbers a reviewer asks for first."""

    path: str
    session_id: str
    unchanged: bool
    appended_after: int | None  # the grown rollout's new part went in after this version
    events: int
    turns: int
    calls: int
    failed: int
    interruptions: int
    constraints: int
    compactions: tuple[CompactionReview, ...]
    notes: tuple[Note, ...]

    @property
    def warnings(self) -> tuple[str, ...]:
        """The notes, one line each."""
        return tuple(note_text(n) for n in self.notes)


def load(path: str | Path) -> Mapped:
    """Read and map the rollout at ``path`` (InvalidEvent naming the line if unsound)."""
    return build_plan(read(path))


def ingest(journal: Journal, path: str | Path) -> IngestResult:
    """Ingest the rollout at ``path`` as one session (see the module doc)."""
    return ingest_loaded(journal, load(path), str(path))


def ingest_loaded(journal: Journal, mapped: Mapped, path: str) -> IngestResult:
    """Write a loaded rollout as its session (see :func:`ingest`)."""
    sid = mapped.session_id
    with journal.recorder.transaction():
        stored = journal.recorder.head(sid).version
        if stored == 0:
            write(journal.start_session(sid, config(mapped.window)), mapped.plan.steps)
        else:
            session = journal.session(sid)
            write(session, *_rest(session, mapped.plan.steps, path))
        head = journal.recorder.head(sid).version
    plan = mapped.plan
    return IngestResult(
        path=path,
        session_id=sid,
        unchanged=0 < stored == head,
        appended_after=stored if 0 < stored < head else None,
        events=head,
        turns=plan.turns,
        calls=plan.calls,
        failed=plan.failed,
        interruptions=plan.interruptions,
        constraints=plan.constraints,
        compactions=review_session(journal, sid),
        notes=mapped.notes,
    )


def config(window: int | None) -> SessionConfig:
    """The session of a rollout: in tokens, the model's window, a 20k-token floor."""
    window = window or WINDOW
    return SessionConfig(
        window_tokens=window,
        trigger_tokens=window * 9 // 10,
        truncator_unit="tokens",  # positions are token offsets, as token_count counts
        floor_span=min(20_000, window),
        floor_unit="tokens",
        on_unsafe="halt",  # the rollout is the raw copy: nothing is written outside
    )


def _rest(session: Session, steps: Sequence[Step], path: str) -> tuple[list[Step], list[Noted]]:
    """The steps after those already stored, and the notes on the stored ones the session
    lacks (lines the rollout gained that add no turn); InvalidEvent unless the stored
    turns are the start of the rollout's (role and text)."""
    stored = [(t.role, t.content) for t in session.turns()]
    turns = [(s.role, s.content) for s in steps if isinstance(s, Turn)]
    if len(turns) < len(stored) and stored[: len(turns)] == turns:
        raise InvalidEvent(
            f"session {session.id!r} already holds {len(stored):,} turns, {path} gives"
            f" {len(turns):,} of them (an older or cut copy of the rollout): not ingested"
        )
    if turns[: len(stored)] != stored:
        raise InvalidEvent(
            f"session {session.id!r} already exists with other content: {path} is not ingested"
        )
    at = _after(steps, len(stored))
    return list(steps[at:]), _unrecorded(session, steps[:at])


def _after(steps: Sequence[Step], count: int) -> int:
    """The index of the step after the first ``count`` turns."""
    seen = 0
    for at, step in enumerate(steps):
        if seen == count:
            return at
        seen += isinstance(step, Turn)
    return len(steps)


def _unrecorded(session: Session, steps: Sequence[Step]) -> list[Noted]:
    """The notes ``steps`` raise that the session does not hold (a note folding several
    lines counts again when the rollout added one)."""
    held = Counter(e for e in session.events() if isinstance(e, Noted))
    out: list[Noted] = []
    for step in steps:
        for e in step.raised if isinstance(step, Turn) else ():
            if isinstance(e, Noted) and held[e] > 0:
                held[e] -= 1
            elif isinstance(e, Noted):
                out.append(e)
    return out


def write(session: Session, steps: Sequence[Step], before: Sequence[Event] = ()) -> None:
    """Append ``before``, then ``steps``: turn batches through ``extend``, each boundary
    as a compaction."""
    batch: list[Event] = list(before)
    index = session.state.turns
    for step in steps:
        if isinstance(step, Boundary):
            if batch:
                session.extend(batch)
                batch = []
            _compact(session, step)
            continue
        batch.append(
            TurnAppended(index=index, role=step.role, content=step.content, tokens=step.tokens)
        )
        batch += step.raised
        index += 1
    if batch:
        session.extend(batch)


def _compact(session: Session, boundary: Boundary) -> None:
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


def note_text(note: Note) -> str:
    """A note as one warning line."""
    where = f"line {note.line}: " if note.line is not None else ""
    count = f" ({note.count} items)" if note.count > 1 else ""
    return f"{where}{note.kind}: {note.text}{count}"


def is_rollout(path: str | Path) -> bool:
    """Whether the file at ``path`` starts like a Codex rollout (a ``session_meta`` line);
    ``False`` for anything unreadable or not a regular file."""
    try:  # O_NONBLOCK: a FIFO nobody writes to must not hang the sniff
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # before fdopen: a directory raises there
        os.close(fd)
        return False
    with os.fdopen(fd, "rb") as file:
        first = file.readline(SNIFF_BYTES)
    try:
        return bool(json.loads(first).get("type") == "session_meta")
    except (ValueError, AttributeError):  # a first line past SNIFF_BYTES: how it starts
        return len(first) == SNIFF_BYTES and _META_HEAD.match(first) is not None
