"""Codex CLI rollouts read into tierlog's model (``docs/codex.md``).

``read``/``parse`` turn a rollout into typed items and notes; ``build_plan`` maps
them onto journal steps (turns, calls, failures, interruptions, occupancy, each
``compacted`` a tier-1 compaction); ``ingest`` writes one rollout as a session.
``tierlog ingest`` detects rollouts by their ``session_meta`` first line.
"""

from eventstore.codex._ingest import ingest, is_rollout, load
from eventstore.codex._plan import Mapped, build_plan
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
    "Call",
    "Compaction",
    "Item",
    "Mapped",
    "Message",
    "Note",
    "Output",
    "Reasoning",
    "Rollout",
    "Usage",
    "build_plan",
    "ingest",
    "is_rollout",
    "load",
    "parse",
    "parse_lines",
    "read",
]
