"""Where an ingest got to in a transcript, and reading only what the file gained since.

After every ingest that changes a session, its last event is an ``Ingested``: the
bytes of the file it read (offset, line count, sha256) and, when the tail can be
read on its own later, a ``resume`` record: the main chain's last user or assistant
entry (uuid, message id, line, where its line ends and the sha256 up to there), the
text still queued there, the warnings given and entry types noted, and what the plan
carries over (the calls still open, failed attempts not resolved yet, the files the
user named, the journal's occupancy, the counts).

A later ingest trusts none of it unchecked: the file must be at least as long, and
its bytes up to the recorded end must hash to the recorded sha256 (else it was
rewritten, truncated or rewound: read whole, with a ``reread`` note). An unchanged
file is then done; a grown one is read from the end of the last entry's line, and
only where the tail alone gives what reading the whole file would (see
``_chain.tail_chain``), else the whole file is read, as before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import attrs

from eventstore._session import Session
from eventstore.claude_code import _transcript as cc
from eventstore.claude_code._ends import End, Start
from eventstore.claude_code._lines import TALK_MARKS, Source, open_regular
from eventstore.claude_code._plan import COUNTS, Carried, Draft, Plan, carried
from eventstore.claude_code._plan import Untrusted as Untrusted
from reducers import CallOpened, Ingested, SessionState

FORMAT = 1
CHUNK = 1 << 20


@attrs.frozen(kw_only=True)
class Position:
    """A session's last ``Ingested``, decoded: what was read, and where to go on from."""

    version: int  # the session's version with it
    offset: int
    lines: int
    sha256: str
    leaf_offset: int = 0
    leaf_sha256: str = ""
    start: Start | None = None
    carried: Carried | None = None
    malformed: str = ""  # why a record of this version's format was left out


class Reread(Exception):
    """The file is not what the position says was read: the text says how."""


ATTEMPTED = ("failed", "rejected")  # the dispositions a failed attempt is recorded with


def vouch(carried: Carried, state: SessionState) -> None:
    """Check a resume record's carried state against the session it was read into (its
    events are hash-chained and verified; the record is only its last event's text):
    the occupancy, the calls still open and their names, and the failed attempts not
    resolved yet must be the session's, its counts those a plan keeps and no more calls
    or turns than the session holds. Untrusted says which is not. (The last call is
    checked by :func:`vouch_last_call`, the files the user named when the tail reads
    one, the text still queued by :func:`check`.)"""
    if sorted(carried.counts) != sorted(COUNTS):
        raise Untrusted(f"counts of {sorted(carried.counts)}, not of {sorted(COUNTS)}")
    most = {"calls": len(state.call_ids), "turns": state.turns}
    for name, limit in most.items():
        if carried.counts[name] > limit:
            raise Untrusted(f"{carried.counts[name]:,} {name}, the session's {limit:,}")
    if carried.occupancy != state.occupancy:
        raise Untrusted(f"occupancy {carried.occupancy:,}, the session's {state.occupancy:,}")
    opened = sorted((c, name) for c, (name, _) in carried.open.items())
    calls = state.open_calls.values()
    held = sorted((o.call_id, o.name) for o in calls if not _retracted(state, o.position))
    every = {(o.call_id, o.name) for o in calls}  # a completed response's part's calls too
    if not set(held) <= set(opened) <= every:
        raise Untrusted(f"open calls {opened}, the session's {held}")
    for subject, keys in carried.attempts.items():
        for key in keys:
            fact = state.dispositions.get(key)
            if not key.startswith(f"{subject} (line ") or fact is None:
                raise Untrusted(f"attempt {key!r}, which the session does not hold")
            if fact.disposition not in ATTEMPTED:
                raise Untrusted(f"attempt {key!r}, which the session holds {fact.disposition}")
    _all_attempts(carried, state)


def vouch_last_call(carried: Carried, session: Session) -> None:
    """Untrusted unless the record's last call (named by an interruption or a correction
    before the tail's next request or call) is ``None`` or the session's last call
    opened, by its name."""
    if carried.last_call is not None and carried.last_call != _last_opened(session):
        raise Untrusted(f"last call {carried.last_call!r}, not the session's last one")


def _last_opened(session: Session) -> str | None:
    """The name of the last call the session opened (``None``: none), read from the
    turns since it was opened, back to front, unless it is still open."""
    state = session.state
    if not len(state.call_ids):
        return None
    last = state.call_ids[-1]
    if last in state.open_calls:
        return state.open_calls[last].name
    stop, versions = session.version - 1, state.turn_versions  # the last: the record's own
    for k in range(len(versions) - 1, -1, -1):
        for e in session.events(start=versions[k], stop=stop):
            if isinstance(e, CallOpened) and e.call_id == last:
                return e.name
        stop = versions[k] - 1
    return None


def reopens(plan: Plan, state: SessionState) -> bool:
    """Whether a tail's plan opens a call id the session already holds (the whole file's
    plan notes the second use and keeps the first: the tail's alone cannot tell)."""
    return any(
        isinstance(e, CallOpened) and e.call_id in state.call_ids
        for step in plan.steps
        if isinstance(step, Draft)
        for e in step.raised
    )


def _retracted(state: SessionState, position: int) -> bool:
    """Whether what was raised at ``position`` was raised by a turn taken back (a rewind:
    what it raised stays owed in the session, not in the record read on from). An ingest
    raises a turn's calls and facts right after its ``TurnAppended``, at the session's
    ``last_position``: that turn's start, so the turn is the last one starting at or
    before ``position`` (every turn an ingest writes holds a token)."""
    return bool(state.withdrawn) and state.is_withdrawn(state.turns_before(position))


def _all_attempts(carried: Carried, state: SessionState) -> None:
    """Every failed attempt the session holds open is in the record (interruptions and
    corrections are not attempts)."""
    recorded = {key for keys in carried.attempts.values() for key in keys}
    for key, fact in state.dispositions.items():
        other = key.startswith(("interrupted: ", "corrected: "))
        other = other or _retracted(state, fact.position)
        if fact.disposition in ATTEMPTED and not other and key not in recorded:
            raise Untrusted(f"attempt {key!r} left out")


def recorded(source: Source, transcript: cc.Transcript, plan: Plan) -> Ingested | None:
    """The ``Ingested`` for a transcript read from ``source`` (``None`` when the read
    cannot be pinned down: the bytes up to its last line were not hashed)."""
    last = transcript.last
    sha = source.digest_through(last)
    if sha is None or last < source.first:
        return None
    end = transcript.end
    leaf_sha = source.digest_through(end.line) if end is not None else None
    resume = ""
    if end is not None and leaf_sha is not None:
        resume = _dumps(
            {
                "format": FORMAT,
                "leaf_offset": source.end_of(end.line),
                "leaf_sha256": leaf_sha,
                "end": attrs.asdict(end, recurse=True),
                "carried": attrs.asdict(carried(plan), filter=lambda a, _: a.name not in _LAZY),
            }
        )
    return Ingested(
        source=Path(source.path).name or "transcript",
        offset=source.end_of(last),
        lines=last,
        sha256=sha,
        resume=resume,
    )


_LAZY = ("said", "asked")  # read from the journal, never recorded


def _dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def position(event: Ingested, version: int, session_id: str) -> Position:
    """``event`` decoded; its resume record left out (read whole) when it is not one this
    version wrote, or one of its format that does not parse (``malformed`` says why)."""
    base = Position(version=version, offset=event.offset, lines=event.lines, sha256=event.sha256)
    record: object = None
    try:
        record = json.loads(event.resume) if event.resume else None
        return _resumable(base, record, session_id) if record is not None else base
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        ours = isinstance(record, dict) and record.get("format") == FORMAT
        why = f"{type(exc).__name__}: {exc}"[:200]
        return attrs.evolve(base, malformed=why) if ours else base


def _resumable(base: Position, record: Mapping[str, Any], session_id: str) -> Position:
    if record["format"] != FORMAT:
        return base
    end = record["end"]
    queued = tuple(cc.Queued(line=_int(q["line"]), text=_str(q["text"])) for q in end["queued"])
    finish = End(
        leaf=_str(end["leaf"]),
        message=None if end["message"] is None else _str(end["message"]),
        line=_int(end["line"]),
        queued=queued,
        last=_int(end["last"]),
        folded=_strs(end["folded"]),
        types=_strs(end["types"]),
        digests=_strs(end["digests"]),
    )
    c = record["carried"]
    before = Carried(
        open={_str(k): (_str(v[0]), _str(v[1])) for k, v in c["open"].items()},
        last_call=None if c["last_call"] is None else _str(c["last_call"]),
        attempts={_str(k): _strs(v) for k, v in c["attempts"].items()},
        pointed=_strs(c["pointed"]),
        occupancy=_int(c["occupancy"]),
        counts={_str(k): _int(v) for k, v in c["counts"].items()},
    )
    leaf_offset = _int(record["leaf_offset"])
    if not (finish.line <= base.lines and leaf_offset <= base.offset):
        raise ValueError("the leaf is past what was read")
    start = Start(session_id=session_id, end=finish, calls=frozenset(before.open))
    return attrs.evolve(
        base,
        leaf_offset=leaf_offset,
        leaf_sha256=_str(record["leaf_sha256"]),
        start=start,
        carried=before,
    )


def _int(value: object) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"not a count: {value!r}")
    return value


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"not text: {value!r}")
    return value


def _strs(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise TypeError(f"not a list: {value!r}")
    return tuple(_str(v) for v in value)


# -- checking the file ----------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class Checked:
    """The file at a position checked: unchanged, or grown (``tail``: its lines after the
    last entry read, hashed on from there; ``None`` when it cannot be read alone)."""

    unchanged: bool
    tail: Source | None = None


def check(path: str | Path, at: Position, max_bytes: int) -> Checked:
    """Whether the file still starts with what was read at ``at`` (Reread if not)."""
    file = open_regular(path)
    try:
        size = file.seek(0, 2)
        if size < at.offset:
            raise Reread(f"it is shorter ({size:,} bytes) than the {at.offset:,} read before")
        file.seek(0)
        digest = hashlib.sha256()
        resumable = at.start is not None and at.leaf_offset > 0
        leaf = _hash(file, digest, at.leaf_offset) if resumable else None
        if resumable and leaf is not None and leaf.hexdigest() != at.leaf_sha256:
            raise Reread(f"its first {at.leaf_offset:,} bytes are not those read before")
        _hash(file, digest, at.offset - file.tell())
        if digest.hexdigest() != at.sha256:
            raise Reread(f"its first {at.offset:,} bytes are not those read before")
        if leaf is not None and at.start is not None:
            _leaf_is_last(file, at.start.end, (at.leaf_offset, at.offset))
            _queued_hold(file, at.start.end.queued, at.leaf_offset)
    except BaseException:
        file.close()
        raise
    if size == at.offset or leaf is None or at.start is None:
        file.close()
        return Checked(unchanged=size == at.offset)
    try:
        start = _past_newline(file, at.start.end.line, at.leaf_offset, leaf)
    except BaseException:
        file.close()
        raise
    first = at.start.end.line + 1
    tail = Source(path, max_bytes=max_bytes, start=start, first=first, digest=leaf, file=file)
    return Checked(unchanged=False, tail=tail)


def _past_newline(file: BinaryIO, number: int, offset: int, digest: Any) -> int:
    """Where the lines after the leaf's (line ``number``, read up to ``offset``) start. A
    leaf line read before its newline was written (Claude Code caught before its last
    byte: the entry was whole) ends at the newline now there, hashed into ``digest``:
    the tail starts after it, else the newline would be counted as a line of its own and
    every line after it one too far. Reread when more than blanks came before it (the
    line read is not the line there now)."""
    if offset == 0:
        return offset
    file.seek(offset - 1)
    if file.read(1) == b"\n":
        return offset
    rest = file.readline(CHUNK)
    if not rest.endswith(b"\n") or rest.strip():
        raise Reread(f"line {number} was read before its end, and has more to it now")
    digest.update(rest)
    return offset + len(rest)


TALK_TYPES = ("user", "assistant")


def _leaf_is_last(file: BinaryIO, end: End, span: tuple[int, int]) -> None:
    """Untrusted unless the recorded leaf is the entry whose line ends at its offset
    (its uuid, and its message id when it is an assistant entry) and no user or
    assistant entry of the main conversation follows it in what was read: a leaf
    moved back would read stored entries again."""
    leaf_offset, offset = span
    leaf = _entry(_line_before(file, leaf_offset))
    if leaf.get("uuid") != end.leaf:
        raise Untrusted(f"its leaf {end.leaf!r} is not line {end.line}'s entry")
    said = leaf.get("message") if leaf.get("type") == "assistant" else None
    if isinstance(said, dict) and said.get("id") != end.message:
        raise Untrusted(f"its message {end.message!r} is not its leaf's ({said.get('id')!r})")
    file.seek(leaf_offset)
    for number, line in enumerate(iter(lambda: file.readline(offset - file.tell()), b""), 1):
        entry = _entry(line) if any(t in line for t in TALK_MARKS) else {}
        if entry.get("type") in TALK_TYPES and not entry.get("isSidechain"):
            raise Untrusted(f"line {end.line + number}, after its leaf, is a {entry['type']} entry")
        if file.tell() >= offset:
            return


def _queued_hold(file: BinaryIO, queued: tuple[cc.Queued, ...], offset: int) -> None:
    """Untrusted unless each text the record says is still queued is the ``enqueue`` of
    its line, before the leaf (read on, a ``remove`` makes it a user turn)."""
    wanted = {q.line: q.text for q in queued}
    if not wanted:
        return
    file.seek(0)
    for number, line in enumerate(iter(lambda: file.readline(offset - file.tell()), b""), 1):
        if number in wanted:
            entry = _entry(line)
            held = entry.get("type") == "queue-operation" and entry.get("operation") == "enqueue"
            if not held or entry.get("content") != wanted.pop(number):
                raise Untrusted(f"text queued at line {number}, which is not queued there")
            if not wanted:
                return
        if file.tell() >= offset:
            break
    raise Untrusted(f"text queued at line {min(wanted)}, past the leaf")


def _line_before(file: BinaryIO, offset: int) -> bytes:
    """The line that ends at ``offset`` (its newline included)."""
    start = offset - 1
    while start > 0:
        step = min(CHUNK, start)
        file.seek(start - step)
        cut = file.read(step).rfind(b"\n")
        if cut >= 0:
            start = start - step + cut + 1
            break
        start -= step
    file.seek(max(start, 0))
    return file.read(offset - max(start, 0))


def _entry(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _hash(file: Any, digest: Any, count: int) -> Any:
    """Hash the next ``count`` bytes of ``file`` into ``digest``; a copy of it after them."""
    while count > 0:
        chunk = file.read(min(CHUNK, count))
        if not chunk:
            raise Reread("it ended while it was read")
        digest.update(chunk)
        count -= len(chunk)
    return digest.copy()
