"""What a carrier (``export``, ``import``, ``ship``) checks of a session before it
carries it anywhere: everything ``verify`` checks of that session.

A tampered session must not come out of a carrier looking clean. ``export``, ``ship``
and ``import`` refuse a session ``verify`` rejects, naming what it found; with
``allow_findings`` they carry it, and the findings go with it: in the export's
trailer, in ``Noted`` events of the imported session (``audit`` lists them), and in
the shipped rows themselves (copied verbatim, they fail the destination's ``verify``
as they failed the source's).
"""

from __future__ import annotations

from collections.abc import Sequence

from eventstore._errors import IntegrityError
from eventstore._journal import Journal
from eventstore._ops._audit import Finding, verify_session
from reducers import Noted

FINDING_NOTE = "carried_finding"  # the kind of the Noted event an import records
UNTRAILED_NOTE = "read_without_trailer"  # an import read a session with no trailer
UNTRAILED = (
    "read without a trailer (--no-trailer): the file may have been cut short after"
    " this session's last event, and that cannot be told"
)
_NOTE_CHARS = 2_000


class NotVerified(IntegrityError):
    """A carrier refused a session that does not verify; ``findings`` are what it found."""

    def __init__(self, session_id: str, findings: Sequence[str], carrier: str) -> None:
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        super().__init__(
            f"session {session_id!r} does not verify: {findings[0]}{more}; {carrier}"
            " --allow-findings carries it with its findings recorded"
        )
        self.session_id = session_id
        self.findings = tuple(findings)


def describe(finding: Finding) -> str:
    """A finding as one line that names its check and version."""
    where = f" v{finding.version}" if finding.version is not None else ""
    return f"{finding.check}{where}: {finding.problem}"


def session_findings(journal: Journal, session_id: str) -> list[str]:
    """What ``verify`` finds wrong with one session (chain, payloads, decisions
    re-derived, spill bytes, snapshot), one line each; empty when it verifies."""
    return [describe(f) for f in verify_session(journal, session_id) if f.fatal]


def check_carried(
    journal: Journal, session_id: str, carrier: str, *, allow_findings: bool
) -> list[str]:
    """The session's findings; NotVerified if there are some and they are not allowed."""
    found = session_findings(journal, session_id)
    if found and not allow_findings:
        raise NotVerified(session_id, found, carrier)
    return found


def finding_notes(findings: Sequence[str], lines: Sequence[int | None] = ()) -> list[Noted]:
    """The ``Noted`` events that record carried findings at an import's destination."""
    where = list(lines) + [None] * (len(findings) - len(lines))
    return [
        Noted(kind=FINDING_NOTE, text=_cut(text), line=line)
        for text, line in zip(findings, where, strict=True)
    ]


def _cut(text: str) -> str:
    return text if len(text) <= _NOTE_CHARS else text[: _NOTE_CHARS - 1] + "…"
