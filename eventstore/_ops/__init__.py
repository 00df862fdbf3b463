"""Operations over whole journals: verify and replay, import and export, ship, witnesses, audit."""

from __future__ import annotations

from eventstore._ops._audit import (
    AuditReport,
    EvictedObligation,
    Finding,
    SessionAudit,
    audit,
    clean_spills,
    verify,
)
from eventstore._ops._carry import NotVerified, session_findings
from eventstore._ops._evidence import RESOLVED, Carried, carried_by, resolved_later
from eventstore._ops._import import Import, Imported, created_journal
from eventstore._ops._jobs import Reopen, WorkerDied
from eventstore._ops._lines import FileSession, read_file
from eventstore._ops._reviews import Review, Reviewer, ReviewLine, review, reviewers
from eventstore._ops._rules import (
    HEURISTIC,
    IMPERATIVE,
    rule_key,
    sentences,
    stated_rules,
    states_rule,
)
from eventstore._ops._ship import CHUNK, require_chunk, ship
from eventstore._ops._transfer import export_lines, read_sessions
from eventstore._ops._witness import SessionHead, check_witness, heads, read_witness

__all__ = [
    "CHUNK",
    "HEURISTIC",
    "IMPERATIVE",
    "RESOLVED",
    "AuditReport",
    "Carried",
    "EvictedObligation",
    "FileSession",
    "Finding",
    "Import",
    "Imported",
    "NotVerified",
    "Reopen",
    "Review",
    "ReviewLine",
    "Reviewer",
    "SessionAudit",
    "SessionHead",
    "WorkerDied",
    "audit",
    "carried_by",
    "check_witness",
    "clean_spills",
    "created_journal",
    "export_lines",
    "heads",
    "read_file",
    "read_sessions",
    "read_witness",
    "require_chunk",
    "resolved_later",
    "review",
    "reviewers",
    "rule_key",
    "sentences",
    "session_findings",
    "ship",
    "stated_rules",
    "states_rule",
    "verify",
]
