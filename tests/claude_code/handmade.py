"""The hand-made fixtures: generated transcripts edited by a rule, so each stays reproducible.

- ``handmade-missing-logical-parent.jsonl``: the first ``compact_boundary`` names a
  ``logicalParentUuid`` that is in no entry (as Claude Code 2.1.39 wrote in a real
  session), so the chain must fall back to the last main-chain entry before it;
- ``handmade-broken-chain.jsonl``: the entry before the first tool result is deleted,
  so the main chain cannot be read whole.

Each gets a session id of its own (the original's, its last four digits replaced), so
all of them can be ingested into one journal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ABSENT = "00000000-0000-4000-8000-000000000000"


def derive(source: Path, out: Path) -> list[Path]:
    """Write both variants of ``source`` into ``out``; their paths."""
    entries = [json.loads(x) for x in source.read_text(encoding="utf-8").splitlines() if x]
    made = {
        "handmade-missing-logical-parent.jsonl": missing_logical_parent(entries),
        "handmade-broken-chain.jsonl": broken_chain(entries),
    }
    for n, (name, lines) in enumerate(made.items(), 1):
        text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in lines)
        sid = str(entries[-1]["sessionId"])
        (out / name).write_text(text.replace(sid, f"{sid[:-4]}{n:04d}"), encoding="utf-8")
    return [out / name for name in made]


def missing_logical_parent(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries with the first boundary's logical parent made absent."""
    out = [dict(e) for e in entries]
    first = next(e for e in out if e.get("subtype") == "compact_boundary")
    first["logicalParentUuid"] = ABSENT
    return out


def broken_chain(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries without the parent of the first tool result."""
    result = next(e for e in entries if _is_tool_result(e))
    return [e for e in entries if e.get("uuid") != result["parentUuid"]]


def _is_tool_result(entry: dict[str, Any]) -> bool:
    content = (entry.get("message") or {}).get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )
