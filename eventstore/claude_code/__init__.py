"""Claude Code integration: read its transcripts into sessions and review each compaction."""

from __future__ import annotations

from eventstore.claude_code._hook import main as hook_main
from eventstore.claude_code._ingest import (
    FORMATS,
    IngestResult,
    Loaded,
    ingest,
    ingest_loaded,
    load,
)
from eventstore.claude_code._install import (
    Change,
    default_journal,
    install,
    settings_file,
    uninstall,
)
from eventstore.claude_code._review import CompactionReview, ObligationReview, review_session

__all__ = [
    "FORMATS",
    "Change",
    "CompactionReview",
    "IngestResult",
    "Loaded",
    "ObligationReview",
    "default_journal",
    "hook_main",
    "ingest",
    "ingest_loaded",
    "install",
    "load",
    "review_session",
    "settings_file",
    "uninstall",
]
