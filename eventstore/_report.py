"""``tierlog report``: gather what the HTML report shows (``eventstore._html`` renders it).

The data comes through the same doors as the other commands: ``Session.events``
(folded by ``eventstore._timeline_build.build``), ``eventstore._audit.audit`` and
the ``tierlog sessions`` query. Rendering is ``eventstore._html.render``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from eventstore import _output
from eventstore._audit import audit
from eventstore._journal import Journal
from eventstore._timeline import Timeline
from eventstore._timeline_build import build
from reducers import InvalidEvent


@attrs.frozen(kw_only=True)
class SessionReport:
    """One session's timeline, the version shown first, and its ``tierlog audit`` sections."""

    timeline: Timeline
    at: int
    audit: dict[str, list[dict[str, Any]]]


@attrs.frozen(kw_only=True)
class Report:
    """What one report file holds; ``listing`` (the sessions table) only without SESSION."""

    journal: str
    sessions: tuple[SessionReport, ...]
    listing: tuple[dict[str, Any], ...] | None


def collect(journal: Journal, session_id: str | None = None, at: int | None = None) -> Report:
    """The report of one session (at version ``at``), or of every session with the list."""
    if at is not None and session_id is None:
        raise InvalidEvent("--at needs a SESSION: versions belong to one session")
    ids = journal.sessions() if session_id is None else [session_id]
    sessions = tuple(_session(journal, sid, at) for sid in ids)
    listing = None if session_id else tuple(_output.query(journal, _output.SESSIONS_SQL))
    return Report(journal=Path(journal.path).name, sessions=sessions, listing=listing)


def _session(journal: Journal, session_id: str, at: int | None) -> SessionReport:
    session = journal.session(session_id)
    timeline = build(session_id, session.events())
    if at is not None and not 0 <= at <= timeline.version:
        raise InvalidEvent(f"version {at} is outside 0..{timeline.version}")
    sections = audit(journal, [session_id])["sessions"][session_id]
    return SessionReport(
        timeline=timeline, at=timeline.version if at is None else at, audit=sections
    )
