"""Read a Claude Code transcript (JSON Lines) into typed values.

Only the reading lives here: which lines are sound, which entries form the
session's main chain, how an API message split over several entries is put
back together (content blocks and short keys: ``_claude_code_blocks``, whose
values this module re-exports). Mapping onto a journal is ``_ingest``'s job.

The main chain: walk ``parentUuid`` back from the last user or assistant entry,
crossing a compaction through ``logicalParentUuid``. Claude Code writes parallel
tool calls as a branching tree (each result hangs off the entry holding its
``tool_use``, hook progress entries interleave), so the walk alone misses some:
an assistant entry belongs to the chain when its ``message.id`` does, and a tool
result when the ``tool_use`` it answers does. Sidechain entries (subagents, the
summarizer) never do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import attrs

from eventstore._claude_code_blocks import KEY_CHARS as KEY_CHARS
from eventstore._claude_code_blocks import REJECTED_TEXT as REJECTED_TEXT
from eventstore._claude_code_blocks import Block as Block
from eventstore._claude_code_blocks import Text as Text
from eventstore._claude_code_blocks import ToolResult as ToolResult
from eventstore._claude_code_blocks import ToolUse as ToolUse
from eventstore._claude_code_blocks import blocks, text_of
from eventstore._claude_code_blocks import command_head as command_head
from eventstore._claude_code_blocks import short_key as short_key
from reducers import InvalidEvent

KNOWN_TYPES = frozenset(
    {"user", "assistant", "system", "progress", "file-history-snapshot", "queue-operation"}
    | {"summary"}  # older versions: a session title
)
INTERRUPTED_TEXT = "[Request interrupted by user"
MAX_TOKENS = 10**9  # a usage count beyond this is not a context's: the block is ignored
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")  # as Journal.start_session

Raw: TypeAlias = dict[str, Any]


@attrs.frozen(kw_only=True)
class Usage:
    """One API call's token counts: the prompt it was sent and what it wrote."""

    prompt: int  # input_tokens + cache_creation_input_tokens + cache_read_input_tokens
    output: int


@attrs.frozen(kw_only=True)
class Message:
    """One API message of the main chain (entries with the same ``message.id`` merged)."""

    line: int
    role: str
    blocks: tuple[Block, ...]
    usage: Usage | None
    typed: bool  # text the user typed (not a tool result, command output or meta note)


@attrs.frozen(kw_only=True)
class Queued:
    """Text the user typed while the agent worked that never arrived as an entry of its own."""

    line: int
    text: str


@attrs.frozen(kw_only=True)
class Boundary:
    """A ``compact_boundary`` and the summary Claude Code resumed from."""

    line: int
    trigger: str
    pre_tokens: int | None
    summary: str


Item: TypeAlias = Message | Queued | Boundary


@attrs.frozen(kw_only=True)
class Transcript:
    """A transcript's main chain in file order, and what was skipped on the way."""

    session_id: str
    items: tuple[Item, ...]
    warnings: tuple[str, ...]


@attrs.frozen(kw_only=True)
class _Entry:
    line: int
    raw: Raw

    @property
    def type(self) -> str:
        return str(self.raw.get("type"))

    @property
    def uuid(self) -> str | None:
        value = self.raw.get("uuid")
        return value if isinstance(value, str) else None

    @property
    def message_id(self) -> str | None:
        value = self.message.get("id")
        return value if isinstance(value, str) else None

    @property
    def message(self) -> Raw:
        message = self.raw.get("message")
        return message if isinstance(message, dict) else {}


def read(path: str | Path) -> Transcript:
    """The transcript at ``path``; InvalidEvent (naming the line) if it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidEvent(f"cannot read {path}: {exc.strerror}") from None
    return parse(data)


def parse(data: bytes) -> Transcript:
    """A transcript from its bytes (see :func:`read`)."""
    warnings: list[str] = []
    entries = list(_entries(data, warnings))
    chain = _main_chain(entries, warnings)
    items = tuple(_items(entries, chain, warnings))
    return Transcript(session_id=_session_id(entries, chain), items=items, warnings=tuple(warnings))


# -- lines -------------------------------------------------------------------------------
def _entries(data: bytes, warnings: list[str]) -> Iterator[_Entry]:
    lines = [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip()]
    if not lines:
        raise InvalidEvent("empty file: not a Claude Code transcript")
    unknown: dict[str, list[int]] = {}
    for i, (number, line) in enumerate(lines):
        raw = _decode(number, line, last=i == len(lines) - 1, warnings=warnings)
        if raw is None:
            continue
        kind = raw.get("type")
        if isinstance(kind, str) and kind in KNOWN_TYPES:
            yield _Entry(line=number, raw=raw)
        else:
            unknown.setdefault(repr(kind), []).append(number)
    for kind, numbers in unknown.items():
        more = f" (and {len(numbers) - 1} more such lines)" if len(numbers) > 1 else ""
        warnings.append(f"line {numbers[0]}: unknown entry type {kind} skipped{more}")


def _decode(number: int, line: bytes, *, last: bool, warnings: list[str]) -> Raw | None:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidEvent(f"line {number}: not UTF-8 text") from None
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        if last:
            warnings.append(f"line {number}: truncated or malformed last line skipped")
            return None
        problem = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise InvalidEvent(f"line {number}: not JSON ({problem})") from None
    if not isinstance(raw, dict):
        raise InvalidEvent(f"line {number}: not a JSON object, so not a Claude Code entry")
    if "\\ud" in text.lower():  # escaped surrogates: only pairs make text
        try:
            text.encode("utf-8") and json.dumps(raw, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidEvent(f"line {number}: a lone surrogate is not text") from None
    return raw


# -- the main chain ----------------------------------------------------------------------
def _main_chain(entries: Sequence[_Entry], warnings: list[str]) -> set[int]:
    """Line numbers of the main chain's user and assistant entries (see the module doc)."""
    talk = [e for e in entries if e.type in ("user", "assistant")]
    if not talk:
        raise InvalidEvent(
            f"line {entries[0].line if entries else 1}: not a Claude Code transcript"
            " (no user or assistant entry)"
        )
    main = [e for e in talk if e.raw.get("isSidechain") is not True]
    if not main:
        raise InvalidEvent(
            f"line {talk[0].line}: only sidechain entries (a subagent's or the summarizer's"
            " transcript), no session main chain"
        )
    by_uuid: dict[str, _Entry] = {}
    for e in entries:
        if e.uuid is not None and e.raw.get("isSidechain") is not True:
            by_uuid.setdefault(e.uuid, e)
    spine = _spine(main[-1], by_uuid, warnings)
    return _widen(main, spine, warnings)


def _spine(leaf: _Entry, by_uuid: Mapping[str, _Entry], warnings: list[str]) -> set[int]:
    lines: set[int] = set()
    entry: _Entry | None = leaf
    while entry is not None and entry.line not in lines:
        lines.add(entry.line)
        parent = entry.raw.get("parentUuid") or entry.raw.get("logicalParentUuid")
        if not isinstance(parent, str):
            break
        entry = by_uuid.get(parent)
        if entry is None:
            warnings.append(
                f"line {min(lines)}: parent {parent!r} is not in the file; "
                "the main chain starts here"
            )
    return lines


def _widen(main: Sequence[_Entry], spine: set[int], warnings: list[str]) -> set[int]:
    """The spine plus the split parts of its messages and the results of its calls."""
    message_ids = {e.message_id for e in main if e.line in spine and e.type == "assistant"} - {None}
    chain = {e.line for e in main if e.line in spine or e.message_id in message_ids}
    calls = {b["id"] for e in main if e.line in chain for b in _blocks(e, "tool_use")}
    for e in main:
        results = _blocks(e, "tool_result")
        if e.line not in chain and results and all(b["tool_use_id"] in calls for b in results):
            chain.add(e.line)
    off = [e.line for e in main if e.line not in chain]
    if off:
        warnings.append(
            f"line {off[0]}: {len(off)} user/assistant entries off the main chain"
            " (an abandoned branch) are not turns"
        )
    return chain


def _blocks(entry: _Entry, kind: str) -> list[Raw]:
    content = entry.message.get("content")
    if not isinstance(content, list):
        return []
    return [
        b
        for b in content
        if isinstance(b, dict)
        and b.get("type") == kind
        and isinstance(b.get("id" if kind == "tool_use" else "tool_use_id"), str)
    ]


def _session_id(entries: Sequence[_Entry], chain: set[int]) -> str:
    """The ``sessionId`` of the chain's last entry, checked as a tierlog session id."""
    leaf = next(e for e in reversed(entries) if e.line in chain)
    value = leaf.raw.get("sessionId")
    if not isinstance(value, str) or not _SESSION_ID.fullmatch(value):
        raise InvalidEvent(f"line {leaf.line}: sessionId {value!r} is not a usable session id")
    return value


def _content(e: _Entry) -> tuple[Block, ...]:
    cwd = e.raw.get("cwd")
    return blocks(
        e.message.get("content"),
        line=e.line,
        cwd=cwd if isinstance(cwd, str) else "",
        refused=e.raw.get("toolUseResult") == "User rejected tool use",
    )


# -- items -------------------------------------------------------------------------------
@attrs.define
class _Group:
    """The entries of one assistant message, merged once the pass is over."""

    entries: list[_Entry]


Slot: TypeAlias = Item | _Group


def _items(entries: Sequence[_Entry], chain: set[int], warnings: list[str]) -> Iterator[Item]:
    slots: list[Slot] = []
    groups: dict[str, _Group] = {}
    for e in entries:
        if e.line in chain and e.type == "assistant":
            mid = e.message_id
            group = groups.get(mid) if mid is not None else None
            if group is None:
                group = _Group(entries=[])
                slots.append(group)
                if mid is not None:
                    groups[mid] = group
            group.entries.append(e)
        elif e.line in chain:
            slots.append(_user(e))
        elif e.type == "system" and e.raw.get("subtype") == "compact_boundary":
            if e.raw.get("isSidechain") is not True:
                slots.append(_boundary(e))
        elif e.type == "queue-operation" and e.raw.get("operation") == "enqueue":
            text = e.raw.get("content")
            if isinstance(text, str) and text.strip():
                slots.append(Queued(line=e.line, text=text))
    items = [_message(s.entries) if isinstance(s, _Group) else s for s in slots]
    return iter(_settle(items, warnings))


def _settle(items: list[Item], warnings: list[str]) -> list[Item]:
    """Summaries onto their boundaries; queued text that later arrived as an entry dropped."""
    out: list[Item] = []
    waiting: int | None = None  # index in ``out`` of a boundary still without its summary
    for i, item in enumerate(items):
        if isinstance(item, Queued) and _delivered(item.text, items[i + 1 :]):
            continue
        if isinstance(item, Message) and item.role == "summary":
            if waiting is None:
                warnings.append(f"line {item.line}: a compact summary without a boundary, skipped")
            else:
                boundary = out[waiting]
                assert isinstance(boundary, Boundary)
                out[waiting] = attrs.evolve(boundary, summary=text_of(item.blocks))
                waiting = None
            continue
        if isinstance(item, Boundary):
            if waiting is not None:
                warnings.append(f"line {out[waiting].line}: compact boundary without a summary")
            waiting = len(out)
        out.append(item)
    if waiting is not None:
        warnings.append(f"line {out[waiting].line}: compact boundary without a summary")
    return out


def _delivered(text: str, later: Sequence[Item]) -> bool:
    wanted = text.strip()
    command = f"<command-name>{wanted.split()[0]}</command-name>" if wanted[:1] == "/" else None
    for item in later:
        if isinstance(item, Message) and item.role == "user":
            said = text_of(item.blocks).strip()
            if said == wanted or (command is not None and command in said):
                return True
    return False


def _boundary(e: _Entry) -> Boundary:
    meta = e.raw.get("compactMetadata")
    meta = meta if isinstance(meta, dict) else {}
    pre = meta.get("preTokens")
    return Boundary(
        line=e.line,
        trigger=str(meta.get("trigger") or "unknown"),
        pre_tokens=pre if type(pre) is int and pre >= 0 else None,
        summary="",
    )


def _user(e: _Entry) -> Message:
    if e.type != "user" or "content" not in e.message:
        raise InvalidEvent(f"line {e.line}: a {e.type} entry without message content")
    blocks = _content(e)
    if e.raw.get("isCompactSummary") is True:
        return Message(line=e.line, role="summary", blocks=blocks, usage=None, typed=False)
    typed = (
        e.raw.get("isMeta") is not True
        and all(isinstance(b, Text) and b.kind == "text" for b in blocks)
        and not text_of(blocks).lstrip().startswith(("<", INTERRUPTED_TEXT))
    )
    return Message(line=e.line, role="user", blocks=blocks, usage=None, typed=typed)


def _message(parts: Sequence[_Entry]) -> Message:
    blocks: list[Block] = []
    for e in parts:
        if "content" not in e.message:
            raise InvalidEvent(f"line {e.line}: an assistant entry without message content")
        blocks += _content(e)
    usages = [u for u in (_usage(e.message.get("usage")) for e in parts) if u is not None]
    usage = None
    if usages:
        usage = Usage(prompt=usages[-1].prompt, output=max(u.output for u in usages))
    return Message(
        line=parts[0].line, role="assistant", blocks=tuple(blocks), usage=usage, typed=False
    )


def _usage(raw: object) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    fields = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    counts = [raw.get(f) or 0 for f in (*fields, "output_tokens")]
    if not all(type(c) is int and 0 <= c < MAX_TOKENS for c in counts) or not any(counts):
        return None
    return Usage(prompt=sum(counts[:3]), output=counts[3])
