"""``tierlog report``: gather what the HTML report shows (``eventstore._html`` renders it).

The data comes through the same doors as the other commands: the session's stored
rows, read through the hash-chain walk ``tierlog verify`` does
(``eventstore._chain.ChainWalk``, which decodes each event once) and folded by
``eventstore._timeline_build.build``; ``eventstore._audit.audit``; and the recorder's
session summaries (what ``tierlog sessions`` prints).

A session whose chain breaks (a row edited, deleted or reordered behind tierlog's
back) is still drawn, all of it, and its :class:`SessionReport` names the first bad
version: the page warns that nothing from there on is verified, and ``tierlog
report`` exits 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs

from eventstore._errors import IntegrityError
from eventstore._journal import Journal
from eventstore._ops import SessionAudit, audit
from eventstore._report._build import build
from eventstore._report._timeline import Timeline
from eventstore._store import ChainProblem, ChainWalk, SessionSummary, from_rows
from reducers import Event, InvalidArgument, InvalidEvent


@attrs.frozen(kw_only=True)
class SessionReport:
    """One session's timeline, the version shown first, its ``tierlog audit`` sections,
    and the first row that breaks its hash chain (``None``: every row verified)."""

    timeline: Timeline
    at: int
    audit: SessionAudit
    chain: ChainProblem | None = None


@attrs.frozen(kw_only=True)
class Report:
    """What one report file holds; ``listing`` (the sessions table) only without SESSION."""

    journal: str
    sessions: tuple[SessionReport, ...]
    listing: tuple[SessionSummary, ...] | None

    @property
    def broken(self) -> tuple[ChainProblem, ...]:
        """The sessions whose hash chain breaks, each at its first bad version."""
        return tuple(s.chain for s in self.sessions if s.chain is not None)


def collect(journal: Journal, session_id: str | None = None, at: int | None = None) -> Report:
    """The report of one session (at version ``at``), or of every session with the list."""
    if at is not None and session_id is None:
        raise InvalidArgument("--at needs a SESSION: versions belong to one session")
    ids = journal.sessions() if session_id is None else [session_id]
    sessions = tuple(_session(journal, sid, at) for sid in ids)
    listing = None if session_id else tuple(journal.recorder.summaries())
    name = Path(journal.recorder.location).name
    return Report(journal=name, sessions=sessions, listing=listing)


def _session(journal: Journal, session_id: str, at: int | None) -> SessionReport:
    walk = ChainWalk(session_id, journal.recorder.read(session_id))
    timeline = build(session_id, _events(walk, journal, session_id))
    if at is not None and not 0 <= at <= timeline.version:
        raise InvalidArgument(f"version {at} is outside 0..{timeline.version}")
    sections = audit(journal, [session_id]).sessions[session_id]
    return SessionReport(
        timeline=timeline,
        at=timeline.version if at is None else at,
        audit=sections,
        chain=walk.problem,
    )


def _events(walk: ChainWalk, journal: Journal, session_id: str) -> Iterator[Event]:
    """The session's events, its hash chain checked on the way; past the first bad row,
    the rest as stored (a row that does not decode is an ``IntegrityError``)."""
    yield from walk
    if walk.problem is not None:
        rows = journal.recorder.read_payloads(session_id, start=walk.problem.version)
        try:
            yield from from_rows(rows)
        except InvalidEvent as exc:
            raise IntegrityError(f"session {session_id!r}: malformed stored event: {exc}") from None
