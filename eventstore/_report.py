"""``tierlog report``: gather what the HTML report shows (``eventstore._html`` renders it).

The data comes through the same doors as the other commands: ``Session.events``
(folded by ``eventstore._timeline_build.build``), ``eventstore._audit.audit`` and
the recorder's session summaries (what ``tierlog sessions`` prints).
"""

from __future__ import annotations

from pathlib import Path

import attrs

from eventstore._audit import SessionAudit, audit
from eventstore._journal import Journal
from eventstore._recorder import SessionSummary
from eventstore._timeline import Timeline
from eventstore._timeline_build import build
from reducers import InvalidEvent


@attrs.frozen(kw_only=True)
class SessionReport:
    """One session's timeline, the version shown first, and its ``tierlog audit`` sections."""

    timeline: Timeline
    at: int
    audit: SessionAudit


@attrs.frozen(kw_only=True)
class Report:
    """What one report file holds; ``listing`` (the sessions table) only without SESSION."""

    journal: str
    sessions: tuple[SessionReport, ...]
    listing: tuple[SessionSummary, ...] | None


def collect(journal: Journal, session_id: str | None = None, at: int | None = None) -> Report:
    """The report of one session (at version ``at``), or of every session with the list."""
    if at is not None and session_id is None:
        raise InvalidEvent("--at needs a SESSION: versions belong to one session")
    ids = journal.sessions() if session_id is None else [session_id]
    sessions = tuple(_session(journal, sid, at) for sid in ids)
    listing = None if session_id else tuple(journal.recorder.summaries())
    name = Path(journal.recorder.location).name
    return Report(journal=name, sessions=sessions, listing=listing)


def _session(journal: Journal, session_id: str, at: int | None) -> SessionReport:
    session = journal.session(session_id)
    timeline = build(session_id, session.events())
    if at is not None and not 0 <= at <= timeline.version:
        raise InvalidEvent(f"version {at} is outside 0..{timeline.version}")
    sections = audit(journal, [session_id]).sessions[session_id]
    return SessionReport(
        timeline=timeline, at=timeline.version if at is None else at, audit=sections
    )
