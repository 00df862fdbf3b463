"""Export a session as JSON Lines (its trailer last); read such lines back and import them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from eventstore._errors import IntegrityError
from eventstore._journal import Journal
from eventstore._ops._carry import check_carried
from eventstore._ops._import import Import, Imported
from eventstore._ops._lines import TRAILER, read_file
from eventstore._store import GENESIS, Recorded, from_payload
from reducers import Event, InvalidEvent


def export_lines(
    journal: Journal, session_id: str, *, allow_findings: bool = False
) -> Iterator[str]:
    """One JSON object a line per event (the stored row, payload as an object), then
    the session's trailer (``_lines``: its event count and head hash).

    A session ``verify`` rejects is refused before the first line
    (:class:`NotVerified`, naming the finding) unless ``allow_findings``: then its
    rows are written as stored and the trailer carries the findings."""
    if not journal.has_session(session_id):
        raise InvalidEvent(f"no session {session_id!r} in {journal.recorder.location}")
    head = journal.recorder.head(session_id)
    found = check_carried(journal, session_id, "export", allow_findings=allow_findings)
    last, count = GENESIS, 0
    for row in journal.recorder.read(session_id, stop=head.version):
        yield _line(row)
        last, count = row.hash, count + 1
    trailer: dict[str, Any] = {TRAILER: session_id, "events": count, "hash": last}
    if found:
        trailer["findings"] = found
    yield json.dumps(trailer, sort_keys=True, ensure_ascii=False)


def _line(row: Recorded) -> str:
    try:  # a row edited into something that is no event is not written out
        from_payload(row.type, row.payload)
    except InvalidEvent as exc:
        raise IntegrityError(
            f"session {row.session_id!r} v{row.version}: malformed stored event: {exc}"
        ) from None
    return json.dumps(
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


def read_sessions(
    lines: Iterable[bytes | str], *, require_trailer: bool = True
) -> dict[str, list[Event]]:
    """Each session's events from exported lines (``_lines.read_file``): InvalidEvent on
    a malformed line, a session without its trailer (when ``require_trailer``), or a
    finding (a line whose hash does not link: ``read_file`` hands those back)."""
    found = read_file(lines, require_trailer=require_trailer)
    for sid, session in found.items():
        if session.findings:
            raise InvalidEvent(f"session {sid!r}: {session.findings[0]}")
    return {sid: list(session.events) for sid, session in found.items()}


def import_file(
    journal: Journal,
    file: Iterable[bytes | str],
    *,
    rename: str | None = None,
    progress: Callable[[int], None] | None = None,
    allow_findings: bool = False,
    require_trailer: bool = True,
) -> list[Imported]:
    """Import every session in ``file`` into ``journal``, re-deciding every command.

    A session whose lines do not link, whose export carried findings, or whose
    commands the current checks decide differently (an unsafe compaction that was
    committed, a spill whose sha256 is not that of its turns) does not verify: it is
    refused (:class:`NotVerified`) unless ``allow_findings``, and then imported as
    re-decided, each finding recorded as a ``Noted`` event. A command invalid in the
    file's own history, a malformed line or a missing trailer aborts the import
    whole. Sessions already present with the same history are left unchanged.
    """
    found = read_file(file, require_trailer=require_trailer)
    sessions = {sid: list(s.events) for sid, s in found.items()}
    findings = {sid: s.findings for sid, s in found.items()}
    untrailed = frozenset(sid for sid, s in found.items() if not s.trailer)
    with Import(
        journal.path,
        sessions,
        rename=rename,
        findings=findings,
        allow_findings=allow_findings,
        untrailed=untrailed,
    ) as job:
        job.decide(journal, progress)
        return job.commit(journal)
