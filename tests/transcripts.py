"""Replay real Claude Code transcripts (tests/data/claude-code, MIT) into a tierlog session.

Each user or assistant entry becomes a turn (assistant tokens from its usage
block, others estimated at 4 characters a token), each ``tool_use`` block an open
call and each ``tool_result`` its resolution. A ``compact_boundary`` entry is
reported to the caller, which decides what compaction to propose there.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import eventstore

DATA = Path(__file__).resolve().parent / "data" / "claude-code"
LONG_SESSION = DATA / "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"  # gzip: under 1 MB
SUMMARIZER_RUN = DATA / "258c7280-ae70-4798-800f-63464d01a85d.acompact.jsonl"
SHORT = DATA / "short.jsonl"
TOOL_HEAVY = DATA / "tool_heavy.jsonl"


def text_of(path: Path) -> str:
    """A fixture's text, decompressed when it is stored gzipped."""
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes()).decode("utf-8")
    return path.read_text(encoding="utf-8")


def plain_copy(path: Path, folder: Path) -> Path:
    """``path`` as a plain ``.jsonl`` file in ``folder`` (decompressed if gzipped)."""
    target = folder / path.name.removesuffix(".gz")
    if not target.exists():
        target.write_text(text_of(path), encoding="utf-8")
    return target


def entries(path: Path) -> Iterator[dict[str, Any]]:
    """The transcript's JSON lines."""
    for line in text_of(path).splitlines():
        if line.strip():
            yield json.loads(line)


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def _tokens(entry: dict[str, Any], text: str) -> int:
    usage = entry["message"].get("usage") or {}
    return int(usage.get("output_tokens") or max(1, len(text) // 4))


def replay(
    session: eventstore.Session,
    path: Path,
    on_boundary: Callable[[eventstore.Session, dict[str, Any]], None] = lambda s, e: None,
    on_call: Callable[[eventstore.Session, str], None] = lambda s, c: None,
) -> None:
    """Append the transcript to ``session``; ``on_boundary`` runs at each compaction."""
    for entry in entries(path):
        if entry.get("subtype") == "compact_boundary":
            on_boundary(session, entry)
        message = entry.get("message")
        if entry.get("type") not in ("user", "assistant") or not isinstance(message, dict):
            continue
        content = message.get("content")
        text = _text(content)
        session.append_turn(entry["type"], text, _tokens(entry, text))
        for block in content if isinstance(content, list) else []:
            _block(session, block, on_call)


def _block(
    session: eventstore.Session, block: dict[str, Any], on_call: Callable[..., None]
) -> None:
    if block.get("type") == "tool_use":
        session.open_call(block["id"], "tool_call", block.get("name", "tool"))
        on_call(session, block["id"])
    elif block.get("type") == "tool_result" and block["tool_use_id"] in session.state.open_calls:
        session.resolve_call(block["tool_use_id"], "error" if block.get("is_error") else "ok")


def compact_summary(path: Path) -> str:
    """The text Claude Code's auto-compaction put in place of the history."""
    for entry in entries(path):
        if entry.get("isCompactSummary"):
            return _text(entry["message"]["content"])
    raise LookupError(f"{path} has no compact summary")
