"""Export a session as JSON Lines; import one back through the commit pipeline."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import IO

import attrs

from eventstore._codec import SCHEMA_VERSION, from_payload
from eventstore._journal import Journal, check_session_id
from eventstore._replay import command_of, commands
from eventstore._session import Session
from reducers import Event, InvalidEvent, SessionConfig, SessionStarted


def export_lines(journal: Journal, session_id: str) -> Iterator[str]:
    """One JSON object a line per event: the stored row, payload as an object."""
    if not journal.has_session(session_id):
        raise InvalidEvent(f"no session {session_id!r} in {journal.recorder.location}")
    for row in journal.recorder.read(session_id):
        yield json.dumps(
            {
                "session_id": row.session_id,
                "version": row.version,
                "type": row.type,
                "schema_version": row.schema_version,
                "recorded_at": row.recorded_at,
                "hash": row.hash,
                "payload": json.loads(row.payload),
            },
            sort_keys=True,
            ensure_ascii=False,
        )


@attrs.frozen(kw_only=True)
class Imported:
    """What ``import_file`` did for one session."""

    source_id: str
    session_id: str
    events: int
    redecided: int
    skipped: tuple[str, ...]
    unchanged: bool


def read_sessions(lines: Iterable[str]) -> dict[str, list[Event]]:
    """Parse exported lines into each session's events (InvalidEvent on any bad line)."""
    sessions: dict[str, list[Event]] = {}
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                _read_line(sessions, line)
            except InvalidEvent as exc:
                raise InvalidEvent(f"line {number}: {exc}") from None
    return sessions


def _read_line(sessions: dict[str, list[Event]], line: str) -> None:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidEvent(f"not JSON ({exc.msg})") from None
    if not isinstance(row, dict) or not {"session_id", "version", "type", "payload"} <= row.keys():
        raise InvalidEvent("need session_id, version, type and payload")
    schema = row.get("schema_version", SCHEMA_VERSION)
    if type(schema) is not int or schema > SCHEMA_VERSION:
        raise InvalidEvent(f"schema version {schema!r} is not one this tierlog reads")
    events = sessions.setdefault(check_session_id(row["session_id"]), [])
    if row["version"] != len(events) + 1:
        raise InvalidEvent(f"version {row['version']}, expected {len(events) + 1}")
    events.append(from_payload(row["type"], row["payload"]))


def import_file(
    journal: Journal,
    file: IO[str],
    *,
    rename: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Imported]:
    """Import every session in ``file`` in one transaction, re-deciding every command.

    A command the current checks decide differently is committed as they decide
    it (an unsafe compaction becomes a refusal). A later command that this makes
    impossible (a marker on the node that was refused) is skipped and reported.
    Any other invalid command, or a malformed line, aborts the import whole.
    """
    sessions = read_sessions(file)
    if rename is not None and len(sessions) != 1:
        raise InvalidEvent(f"--session renames one session; the file holds {len(sessions)}")
    with journal.recorder.transaction():
        return [
            _import_session(journal, source, rename or source, events, progress)
            for source, events in sessions.items()
        ]


def _import_session(
    journal: Journal,
    source: str,
    target: str,
    events: list[Event],
    progress: Callable[[int], None] | None,
) -> Imported:
    check_session_id(target)
    if journal.has_session(target):
        if list(journal.session(target).events()) == events:
            return Imported(
                source_id=source,
                session_id=target,
                events=len(events),
                redecided=0,
                skipped=(),
                unchanged=True,
            )
        raise InvalidEvent(f"session {target!r} already exists with a different history")
    first = events[0]
    if not isinstance(first, SessionStarted):
        raise InvalidEvent(f"session {source!r} does not begin with SessionStarted")
    session = journal.start_session(target, SessionConfig(**attrs.asdict(first)))
    redecided, skipped, version = 0, [], 2
    for count, command in enumerate(commands(events[1:]), 1):
        try:
            redecided += not _replay_command(session, command)
        except InvalidEvent as exc:
            if not redecided:
                raise InvalidEvent(f"{source} v{version}: {exc}") from None
            skipped.append(f"v{version} {type(command[0]).__name__}: {exc}")
        version += len(command)
        if progress:
            progress(count)
    return Imported(
        source_id=source,
        session_id=target,
        events=session.state.version,
        redecided=redecided,
        skipped=tuple(skipped),
        unchanged=False,
    )


def _replay_command(session: Session, group: list[Event]) -> bool:
    """Commit ``group``'s command as the live API would (a refusal is recorded like any
    decision); True if it committed as recorded."""
    command, _ = command_of(group)
    return session.run(command).events == tuple(group)
