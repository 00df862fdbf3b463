"""Claude Code integration: read its transcripts into sessions and review each compaction."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from eventstore.claude_code._hook import main as hook_main  # the standard library only

# The rest is imported when first used (PEP 562): ``tierlog claude-code hook`` runs on
# every prompt and needs the hook alone.
_HOMES = {
    "eventstore.claude_code._ingest": (
        "FORMATS",
        "IngestResult",
        "Loaded",
        "ingest",
        "ingest_loaded",
        "load",
    ),
    "eventstore.claude_code._install": (
        "Change",
        "default_journal",
        "install",
        "settings_file",
        "uninstall",
    ),
    "eventstore.claude_code._review": ("CompactionReview", "ObligationReview", "review_session"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A name of the integration, imported from its module when first asked for."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'eventstore.claude_code' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


if TYPE_CHECKING:
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
