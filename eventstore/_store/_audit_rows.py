"""The rows the audit views give, typed: a session's summary, its refusals,
invalidations, raw fallbacks and notes. The same for every backend (``AuditQueries``
makes them); imported when an audit first needs them."""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class SessionSummary:
    """One line of ``tierlog sessions``."""

    session_id: str
    events: int
    turns: int
    refusals: int
    invalidations: int
    raw_fallbacks: int


@attrs.frozen(kw_only=True)
class CompactionRefusalRow:
    """A ``CompactionRefused`` event, as the ``compaction_refusals`` view shows it."""

    version: int
    node_id: str
    action: str
    rules: str
    violations: str  # the violations as JSON text


@attrs.frozen(kw_only=True)
class MarkerRefusalRow:
    """A ``MarkerRefused`` event, as the ``marker_refusals`` view shows it."""

    version: int
    marker_id: str
    node_id: str
    rules: str
    violations: str


@attrs.frozen(kw_only=True)
class InvalidationRow:
    """A ``MarkerInvalidated`` event."""

    version: int
    marker_id: str
    rule: str
    reason: str


@attrs.frozen(kw_only=True)
class FallbackRow:
    """A resume that fell back to the raw checkpoint."""

    version: int
    marker_id: str
    checkpoint_at: int | None
    reason: str


@attrs.frozen(kw_only=True)
class NoteRow:
    """A ``Noted`` event: a guess, skip or fallback made reading someone else's data."""

    version: int
    kind: str
    line: int | None
    count: int
    text: str


@attrs.frozen(kw_only=True)
class AuditRows:
    """What the audit views say about one session."""

    compaction_refusals: tuple[CompactionRefusalRow, ...]
    marker_refusals: tuple[MarkerRefusalRow, ...]
    marker_invalidations: tuple[InvalidationRow, ...]
    raw_fallbacks: tuple[FallbackRow, ...]
    notes: tuple[NoteRow, ...] = ()
