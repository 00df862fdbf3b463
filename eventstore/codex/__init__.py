"""Codex CLI rollouts read into tierlog's model (``docs/codex.md``).

``read``/``parse`` turn a rollout into typed items and notes; ``build_plan`` maps
them onto journal steps (turns, calls, failures, interruptions, occupancy, each
``compacted`` a tier-1 compaction); ``ingest`` writes one rollout as a session.
``tierlog ingest`` detects rollouts by their ``session_meta`` first line.
"""

from eventstore.codex._ingest import IngestResult, ingest, ingest_loaded, is_rollout, load
from eventstore.codex._plan import Boundary, Mapped, Plan, Turn, build_plan
from eventstore.codex._review import CompactionReview, ObligationReview, review_session
from eventstore.codex._rollout import parse, parse_lines, read
from eventstore.codex._values import (
    Aborted,
    Call,
    Compaction,
    Item,
    Message,
    Note,
    Output,
    Reasoning,
    Rollout,
    Usage,
)

__all__ = [
    "Aborted",
    "Boundary",
    "Call",
    "Compaction",
    "CompactionReview",
    "IngestResult",
    "Item",
    "Mapped",
    "Message",
    "Note",
    "ObligationReview",
    "Output",
    "Plan",
    "Reasoning",
    "Rollout",
    "Turn",
    "Usage",
    "build_plan",
    "ingest",
    "ingest_loaded",
    "is_rollout",
    "load",
    "parse",
    "parse_lines",
    "read",
    "review_session",
]
