"""Claude Code transcripts for the tests: the project's own, and real ones read from beside it.

The project's own (``tests/data/claude-code``) were written by the real CLI against a
mock API (``make fixtures-claude-code``) or derived from those by hand. The real
sessions the team studies are other people's data and are never committed: they are
read from ``../shared/data/claude-code`` beside the clone. Naming one of them
(``transcripts.LONG_SESSION``, ``SUMMARIZER_RUN``, ``SHORT``, ``TOOL_HEAVY``) inside a
test skips the test, with one line, where that folder is not there.

:func:`replay` appends a transcript to a session: each user or assistant entry
becomes a turn (assistant tokens from its usage block, others estimated at 4
characters a token), each ``tool_use`` block an open call and each
``tool_result`` its resolution. A ``compact_boundary`` entry is reported to the
caller, which decides what compaction to propose there.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import eventstore

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "claude-code"
NOTES = DATA / "cli-2.1.332-notes.jsonl"  # the pinned CLI: attachments, both compactions
NOTES_2_0 = DATA / "cli-2.0.77-notes.jsonl"  # the same script on Claude Code 2.0.77
MISSING_PARENT = DATA / "handmade-missing-logical-parent.jsonl"
BROKEN_CHAIN = DATA / "handmade-broken-chain.jsonl"
GENERATED = (NOTES, NOTES_2_0, MISSING_PARENT, BROKEN_CHAIN)

REAL_DIR = ROOT.parent / "shared" / "data" / "claude-code"  # other people's: never committed
REAL_CODEX_DIR = ROOT.parent / "shared" / "data" / "codex"  # a public Codex rollout, likewise
_REAL = {
    "LONG_SESSION": "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "SUMMARIZER_RUN": "258c7280-ae70-4798-800f-63464d01a85d.acompact.jsonl",
    "SHORT": "short.jsonl",
    "TOOL_HEAVY": "tool_heavy.jsonl",
}


def real_sessions() -> list[Path]:
    """Every real session transcript beside the clone (none where it is not there)."""
    if not REAL_DIR.is_dir():
        return []
    return sorted(p for p in REAL_DIR.glob("*.jsonl") if not p.name.endswith(".acompact.jsonl"))


def real(name: str) -> Path:
    """The real transcript ``name`` beside the clone; skips the test where it is not."""
    path = REAL_DIR / name
    if not path.is_file():
        pytest.skip(f"real transcript {name} not beside the clone (../shared/data/claude-code)")
    return path


def __getattr__(name: str) -> Path:
    """``LONG_SESSION``, ``SUMMARIZER_RUN``, ``SHORT``, ``TOOL_HEAVY``: see :func:`real`."""
    if name in _REAL:
        return real(_REAL[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


class Script:
    """A small transcript in Claude Code's format, entry by entry, chained by parentUuid."""

    def __init__(self, session_id: str = "s-1", cwd: str = "/home/u/proj") -> None:
        self.session_id, self.cwd = session_id, cwd
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.messages = 0

    def entry(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append one main-chain entry after the last one."""
        uuid = f"u{len(self.lines)}"
        entry = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "type": kind,
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "uuid": uuid,
            "timestamp": f"2026-02-11T20:00:{len(self.lines) % 60:02d}.000Z",
            **fields,
        }
        self.lines.append(entry)
        self.parent = uuid
        return entry

    def user(self, text: str, **fields: Any) -> dict[str, Any]:
        """A user message."""
        return self.entry("user", message={"role": "user", "content": text}, **fields)

    def assistant(self, *blocks: dict[str, Any], prompt: int = 100, output: int = 10) -> str:
        """One API message written as one entry per block (as Claude Code does)."""
        self.messages += 1
        mid = f"msg_{self.messages}"
        for i, block in enumerate(blocks):
            usage = {
                "input_tokens": 3,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": prompt - 3,
                "output_tokens": output if i == len(blocks) - 1 else 1,
            }
            message = {"id": mid, "role": "assistant", "content": [block], "usage": usage}
            self.entry("assistant", message=message)
        return mid

    @staticmethod
    def text(text: str) -> dict[str, Any]:
        """A text block."""
        return {"type": "text", "text": text}

    @staticmethod
    def tool_use(call_id: str, name: str, **args: Any) -> dict[str, Any]:
        """A tool_use block."""
        return {"type": "tool_use", "id": call_id, "name": name, "input": args}

    def result(
        self, call_id: str, text: str, *, error: bool = False, rejected: bool = False
    ) -> dict[str, Any]:
        """A user entry holding one tool_result."""
        block = {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": error}
        extra = {"toolUseResult": "User rejected tool use"} if rejected else {}
        return self.entry("user", message={"role": "user", "content": [block]}, **extra)

    def boundary(self, pre_tokens: int, summary: str | None, *, trigger: str = "auto") -> None:
        """A compact_boundary and the summary message after it (none: ``summary=None``)."""
        last = self.parent
        self.parent = None
        self.entry(
            "system",
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid=last,
            compactMetadata={"trigger": trigger, "preTokens": pre_tokens},
        )
        if summary is not None:
            self.user(summary, isCompactSummary=True, isVisibleInTranscriptOnly=True)

    def queue(self, text: str, *, taken: bool = True) -> None:
        """Text typed while the agent works (no uuid: not part of the tree); ``taken``:
        Claude Code takes it off the queue at once (a ``remove`` operation)."""
        self.lines.append(
            {
                "type": "queue-operation",
                "operation": "enqueue",
                "sessionId": self.session_id,
                "content": text,
            }
        )
        if taken:
            self.lines.append(
                {"type": "queue-operation", "operation": "remove", "sessionId": self.session_id}
            )

    def dump(self) -> str:
        """The transcript's text."""
        return "".join(json.dumps(line) + "\n" for line in self.lines)

    def write(self, path: Path) -> Path:
        """Write the transcript to ``path``."""
        path.write_text(self.dump(), encoding="utf-8")
        return path
