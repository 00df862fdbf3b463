"""A Codex rollout as a loaded transcript, for the Claude Code ingest's writer.

``load`` reads and maps a rollout (``_rollout``, ``_plan``) into the same ``Loaded``
value the Claude Code ingest writes (``eventstore.claude_code._ingest``): new sessions,
unchanged ones and grown rollouts are told apart there, in one transaction, and each
``compacted`` becomes a tier-1 compaction and a marker. Until the journal has a note
event, the notes travel as the ingest's warnings, ``line N: text``.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from eventstore._journal import Journal
from eventstore.claude_code import _transcript as cc
from eventstore.claude_code._ingest import IngestResult, Loaded, ingest_loaded
from eventstore.codex._plan import build_plan
from eventstore.codex._rollout import read
from eventstore.codex._values import Note

SNIFF_BYTES = 1 << 20  # a session_meta line carries the base instructions: ~20 kB


def load(path: str | Path) -> Loaded:
    """Read and map the rollout at ``path`` (InvalidEvent naming the line if unsound)."""
    mapped = build_plan(read(path))
    warnings = tuple(note_text(n) for n in mapped.notes)
    transcript = cc.Transcript(session_id=mapped.session_id, items=(), warnings=warnings)
    return Loaded(path=str(path), transcript=transcript, plan=mapped.plan)


def ingest(journal: Journal, path: str | Path) -> IngestResult:
    """Ingest the rollout at ``path`` as one session (see the Claude Code ``ingest``)."""
    return ingest_loaded(journal, load(path))


def note_text(note: Note) -> str:
    """A note as one warning line."""
    where = f"line {note.line}: " if note.line is not None else ""
    count = f" ({note.count} items)" if note.count > 1 else ""
    return f"{where}{note.kind}: {note.text}{count}"


def is_rollout(path: str | Path) -> bool:
    """Whether the file at ``path`` starts like a Codex rollout (a ``session_meta`` line);
    ``False`` for anything unreadable (the Claude Code reader then says why)."""
    try:  # O_NONBLOCK: a FIFO nobody writes to must not hang the sniff
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        first = file.readline(SNIFF_BYTES)
    try:
        return bool(json.loads(first).get("type") == "session_meta")
    except (ValueError, AttributeError):
        return False
