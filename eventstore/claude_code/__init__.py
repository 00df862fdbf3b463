"""Claude Code integration: read its transcripts into sessions and review each compaction."""

from __future__ import annotations

from eventstore.claude_code._ingest import (
    FORMATS,
    IngestResult,
    Loaded,
    ingest,
    ingest_loaded,
    load,
)
from eventstore.claude_code._review import CompactionReview, ObligationReview, review_session

__all__ = [
    "FORMATS",
    "CompactionReview",
    "IngestResult",
    "Loaded",
    "ObligationReview",
    "ingest",
    "ingest_loaded",
    "load",
    "review_session",
]
