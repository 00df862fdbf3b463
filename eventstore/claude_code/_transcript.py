"""Read a Claude Code transcript (JSON Lines) into typed values.

Only the reading lives here: how an API message split over several entries is put
back together. The file and its lines are ``_lines``'s, the main chain ``_chain``'s,
boundaries and queued text in order ``_items``'s, content blocks and short keys
``_blocks``'s; this module re-exports their values. Mapping onto a journal is
``_plan``'s job. The main chain's compact boundaries are the ones its walk crosses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeAlias

import attrs

from eventstore._retell import HEADER as RETELL_HEADER
from eventstore.claude_code._blocks import KEY_CHARS as KEY_CHARS
from eventstore.claude_code._blocks import REJECTED_TEXT as REJECTED_TEXT
from eventstore.claude_code._blocks import Block as Block
from eventstore.claude_code._blocks import Text as Text
from eventstore.claude_code._blocks import ToolResult as ToolResult
from eventstore.claude_code._blocks import ToolUse as ToolUse
from eventstore.claude_code._blocks import blocks
from eventstore.claude_code._blocks import command_head as command_head
from eventstore.claude_code._blocks import short_key as short_key
from eventstore.claude_code._blocks import text_of as text_of
from eventstore.claude_code._chain import After, Unresumable, main_chain
from eventstore.claude_code._ends import End, Start, digests, end_of
from eventstore.claude_code._items import Boundary as Boundary
from eventstore.claude_code._items import Dequeued, pending_boundary, settle
from eventstore.claude_code._items import Item as Item
from eventstore.claude_code._items import Message as Message
from eventstore.claude_code._items import Queued as Queued
from eventstore.claude_code._items import Raw as RawItem
from eventstore.claude_code._items import Usage as Usage
from eventstore.claude_code._lines import KNOWN_TYPES as KNOWN_TYPES
from eventstore.claude_code._lines import MAX_BYTES as MAX_BYTES
from eventstore.claude_code._lines import MAX_DEPTH as MAX_DEPTH
from eventstore.claude_code._lines import (
    Entry,
    Raw,
    Seen,
    Warnings,
    entries,
    file_lines,
    shown,
)
from eventstore.claude_code._lines import Note as Note
from reducers import InvalidEvent

INTERRUPTED_TEXT = "[Request interrupted by user"
QUEUE_OPERATIONS = frozenset({"enqueue", "dequeue", "remove"})
MAX_TOKENS = 10**9  # a usage count beyond this is not a context's: the block is ignored
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")  # as Journal.start_session
_USAGE_FIELDS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


@attrs.frozen(kw_only=True)
class Transcript:
    """A transcript's main chain in file order, what was skipped on the way, and the
    notes (in line order) the journal records of it. ``end``: where a later read of its
    tail can start (``None``: something is still open after its last entry, read it
    whole)."""

    session_id: str
    items: tuple[Item, ...]
    warnings: tuple[str, ...]
    notes: tuple[Note, ...] = ()
    end: End | None = None
    last: int = 0  # the last line read whole


def read(path: str | Path, *, max_bytes: int = MAX_BYTES) -> Transcript:
    """The transcript at ``path``; InvalidEvent (naming the line) if it cannot be read."""
    return _parse(file_lines(path, max_bytes))


def parse(data: bytes) -> Transcript:
    """A transcript from its bytes (see :func:`read`)."""
    return _parse(enumerate(data.split(b"\n"), 1))


def read_lines(lines: Iterable[tuple[int, bytes]]) -> Transcript:
    """A transcript from its numbered lines (see :func:`read`)."""
    return _parse(lines)


def read_tail(lines: Iterable[tuple[int, bytes]], start: Start) -> Transcript:
    """The items of a transcript's tail, read after ``start`` as reading the whole file
    would give them (Unresumable when that cannot be told from the tail alone)."""
    return _parse(lines, start)


def _parse(lines: Iterable[tuple[int, bytes]], start: Start | None = None) -> Transcript:
    before = start.end if start is not None else None
    warnings = Warnings(before.folded if before else ())
    seen = Seen()
    if before is not None:
        seen = Seen(tail=True, noted=set(before.types), lines=digests(before.digests))
    found = entries(lines, warnings, seen)
    after = None
    if start is not None:
        after = After(leaf=start.end.leaf, message=start.end.message, calls=start.calls)
    chain, spine = main_chain(found, warnings, after)
    raw, at = _raw_items(found, chain, spine, warnings)
    queued = before.queued if before else ()
    items = tuple(settle(raw, warnings, queued))
    sid = _session_id(found, chain) if start is None or chain else start.session_id
    if start is not None and sid != start.session_id:
        raise Unresumable(f"the tail is of session {sid!r}")
    _mixed(found, chain, sid, warnings, tail=start is not None)
    notes = sorted(warnings.notes, key=lambda n: n.line)
    return Transcript(
        session_id=sid,
        items=items,
        warnings=warnings.all(),
        notes=tuple(n for n in notes if before is None or n.line > before.last),
        end=end_of(found, chain, (raw, at, queued), len(items), (warnings, seen), before),
        last=max(seen.last, before.last if before else 0),
    )


# -- reading ------------------------------------------------------------------------------
def _session_id(entries: Sequence[Entry], chain: set[int]) -> str:
    """The ``sessionId`` of the chain's last entry, checked as a tierlog session id."""
    leaf = next(e for e in reversed(entries) if e.line in chain)
    value = leaf.raw.get("sessionId")
    if not isinstance(value, str) or not _SESSION_ID.fullmatch(value):
        raise InvalidEvent(f"line {leaf.line}: sessionId {value!r} is not a usable session id")
    return value


def _mixed(
    entries: Sequence[Entry], chain: set[int], sid: str, warnings: Warnings, *, tail: bool
) -> None:
    """A note when entries of the main chain carry another ``sessionId`` than the session
    is read as (Unresumable in a tail: the note counts them over the whole file)."""
    others = [e for e in entries if e.line in chain and e.raw.get("sessionId") not in (sid, None)]
    if not others:
        return
    if tail:
        raise Unresumable(f"line {others[0].line}: another sessionId")
    text = (
        f"{len(others)} entries of the main chain carry another sessionId"
        f" ({shown(others[0].raw.get('sessionId'))} first): read as session {sid!r}"
    )
    warnings.note("mixed_sessions", others[0].line, text, count=len(others))


def _content(e: Entry, warnings: Warnings) -> tuple[Block, ...]:
    cwd = e.raw.get("cwd")
    return blocks(
        e.message.get("content"),
        line=e.line,
        cwd=cwd if isinstance(cwd, str) else "",
        refused=e.raw.get("toolUseResult") == "User rejected tool use",
        warnings=warnings,
    )


# -- items -------------------------------------------------------------------------------
@attrs.define
class _Group:
    """The entries of one assistant message, merged once the pass is over."""

    entries: list[Entry]


Slot: TypeAlias = RawItem | _Group


def _raw_items(
    entries: Sequence[Entry], chain: set[int], spine: set[int], warnings: Warnings
) -> tuple[list[RawItem], int]:
    """The items before settling, and the index of the one holding the chain's last user
    or assistant entry (``-1``: none does, or it is not the last message)."""
    slots: list[Slot] = []
    groups: dict[str, _Group] = {}
    leaf = max(chain, default=0)
    holder: Slot | None = None
    messages = {e.uuid: e.line for e in entries if e.uuid is not None and e.line in chain}
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
            holder = group
        elif e.line in chain:
            slots.append(_user(e, warnings))
            holder = slots[-1]
        elif e.type == "system" and e.raw.get("subtype") == "compact_boundary":
            if e.line in spine:
                slots.append(_boundary(e, messages, warnings))
            elif e.raw.get("isSidechain") is not True:
                _off_chain(e.line, leaf, warnings)
        elif e.type == "queue-operation":
            slots += _queue_operation(e, warnings)
        elif e.type == "attachment" and e.line in spine:
            slots += _instructions(e, warnings) + _retold(e)
    items = [_message(s.entries, warnings) if isinstance(s, _Group) else s for s in slots]
    last = next((i for i in range(len(slots) - 1, -1, -1) if _talk(slots[i])), -1)
    return items, (last if last >= 0 and slots[last] is holder else -1)


def _talk(slot: Slot) -> bool:
    """Whether the slot holds a user or assistant entry (not an attachment's message)."""
    return isinstance(slot, _Group) or (
        isinstance(slot, Message) and slot.role not in ("instructions", "retell")
    )


_MEMORY = frozenset({"instructions", "nested_memory"})  # attachments holding CLAUDE.md


def _instructions(e: Entry, warnings: Warnings) -> list[RawItem]:
    """An ``instructions`` attachment (CLAUDE.md, memory files), or a ``nested_memory``
    one (a CLAUDE.md of a folder the agent read in), as one message of role
    ``instructions``: each file's ``Contents of <path> (...):`` and its text. A file it
    names without a text path and content is skipped with a note (its rules are lost)."""
    attachment = e.raw.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") not in _MEMORY:
        return []
    files = attachment.get("files" if attachment.get("type") == "instructions" else "content")
    files = files if isinstance(files, list) else [files]
    read = [f for f in files if isinstance(f, dict) and _strings(f, "path", "content")]
    if len(read) < len(files):
        lost = f"{len(files) - len(read)} instructions file(s) without a text path and content"
        warnings.note("bad_value", e.line, lost + ": their rules are not read")
    parts = [f"Contents of {f['path']} (instructions):\n{f['content']}" for f in read]
    if not parts:
        return []
    text = Text(text="\n\n".join(parts))
    return [Message(line=e.line, role="instructions", blocks=(text,), usage=None, typed=False)]


def _strings(raw: Raw, *keys: str) -> bool:
    return all(isinstance(raw.get(k), str) for k in keys)


def _retold(e: Entry) -> list[RawItem]:
    """A block tierlog's hooks gave the agent (the text of a ``hook_additional_context``
    attachment that starts with the re-tell header) as one message of role ``retell``."""
    attachment = e.raw.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "hook_additional_context":
        return []
    content = attachment.get("content")
    texts = content if isinstance(content, list) else [content]
    return [
        Message(line=e.line, role="retell", blocks=(Text(text=t),), usage=None, typed=False)
        for t in texts
        if isinstance(t, str) and t.startswith(RETELL_HEADER)
    ]


def _queue_operation(e: Entry, warnings: Warnings) -> list[RawItem]:
    """``enqueue`` queues text, ``remove`` takes it off; ``dequeue`` (2.1.3xx: the text is
    delivered as an entry, which settles it) reads as nothing; any other operation is
    skipped with a note."""
    text, operation = e.raw.get("content"), e.raw.get("operation")
    if operation == "enqueue" and isinstance(text, str) and text.strip():
        return [Queued(line=e.line, text=text)]
    if operation not in QUEUE_OPERATIONS:
        text = f"queue operation {shown(operation)} is not one tierlog knows: skipped"
        warnings.note("queue", e.line, text, fold=f"queue {operation!r}")
    return [Dequeued(line=e.line)] if operation == "remove" else []


def _off_chain(line: int, leaf: int, warnings: Warnings) -> None:
    """A boundary the main chain does not go through: pending when nothing follows it."""
    if line > leaf:
        warnings.append(pending_boundary(line))
    else:
        warnings.note("off_chain", line, "a compact boundary off the main chain skipped")


def _boundary(e: Entry, messages: Mapping[str, int], warnings: Warnings) -> Boundary:
    meta = e.raw.get("compactMetadata")
    meta = meta if isinstance(meta, dict) else {}
    pre, trigger = meta.get("preTokens"), meta.get("trigger")
    if pre is not None and not (type(pre) is int and 0 <= pre < MAX_TOKENS):
        warnings.note("bad_value", e.line, f"preTokens {shown(pre)} is not a token count: unknown")
        pre = None
    return Boundary(
        line=e.line,
        trigger=trigger[:KEY_CHARS] if isinstance(trigger, str) and trigger else "unknown",
        pre_tokens=pre,
        summary="",
        kept_from=_kept_from(e, meta.get("preservedSegment"), messages, warnings),
    )


def _kept_from(
    e: Entry, segment: object, messages: Mapping[str, int], warnings: Warnings
) -> int | None:
    """The line of the first message Claude Code kept verbatim after the summary: the
    ``preservedSegment`` (2.1.3xx) from its ``headUuid`` to its ``tailUuid``, the main
    chain's last message before the boundary. ``None`` when there is none, or (a note)
    when it is not that: then every turn before the boundary counts as compacted."""
    if segment is None:
        return None
    ends = [segment.get(k) if isinstance(segment, dict) else None for k in ("headUuid", "tailUuid")]
    head, tail = (messages.get(x) if isinstance(x, str) else None for x in ends)
    last = max((at for at in messages.values() if at < e.line), default=None)
    if head is not None and last is not None and head <= last == tail:
        return head
    text = (
        f"preservedSegment {shown(segment)} is not the main chain's last messages before the"
        " boundary: every turn before it counts as compacted"
    )
    warnings.note("bad_value", e.line, text)
    return None


def _user(e: Entry, warnings: Warnings) -> Message:
    if e.type != "user" or "content" not in e.message:
        raise InvalidEvent(f"line {e.line}: a {e.type} entry without message content")
    blocks = _content(e, warnings)
    if e.raw.get("isCompactSummary") is True:
        return Message(line=e.line, role="summary", blocks=blocks, usage=None, typed=False)
    typed = (
        e.raw.get("isMeta") is not True
        and all(isinstance(b, Text) and b.kind == "text" for b in blocks)
        and not text_of(blocks).lstrip().startswith(("<", INTERRUPTED_TEXT))
    )
    return Message(line=e.line, role="user", blocks=blocks, usage=None, typed=typed)


def _message(parts: Sequence[Entry], warnings: Warnings) -> Message:
    blocks: list[Block] = []
    for e in parts:
        if "content" not in e.message:
            raise InvalidEvent(f"line {e.line}: an assistant entry without message content")
        blocks += _content(e, warnings)
    usages = [u for u in (_usage(e, warnings) for e in parts) if u is not None]
    usage = None
    if usages:
        usage = Usage(prompt=usages[-1].prompt, output=max(u.output for u in usages))
    return Message(
        line=parts[0].line, role="assistant", blocks=tuple(blocks), usage=usage, typed=False
    )


def _usage(e: Entry, warnings: Warnings) -> Usage | None:
    """The entry's usage block; ``None`` when it has none, all zero (a message Claude Code
    made up) or a count that is not one (a warning naming the line)."""
    raw = e.message.get("usage")
    if not isinstance(raw, dict):
        return None
    counts = [raw.get(f) for f in _USAGE_FIELDS]
    for field, count in zip(_USAGE_FIELDS, counts, strict=True):
        if count is not None and not (type(count) is int and 0 <= count < MAX_TOKENS):
            text = f"usage {field} {shown(count)} is not a token count: usage ignored"
            warnings.note("bad_value", e.line, text, fold="usage")
            return None
    tokens = [c or 0 for c in counts]
    if not any(tokens):
        return None
    return Usage(prompt=sum(tokens[:3]), output=tokens[3])
