"""The main chain of a Claude Code transcript: the entries the session went through.

Walk ``parentUuid`` back from the last user or assistant entry through every entry
that has a ``uuid``, whatever its type (``attachment``, ``progress``, ``system``,
types tierlog does not know), crossing a compaction through ``logicalParentUuid``.
Two things the file may not hold, each a note the journal records:

- a ``logicalParentUuid`` in no entry (Claude Code wrote none for it), or one that
  names no entry before the boundary (itself, a later entry: a damaged file): the
  walk goes on from the last entry before the boundary in file order
  (``chain_fallback``);
- a ``parentUuid`` in no entry, one that is not a uuid, or one leading back to an
  entry the walk already crossed (a cycle): the walk ends there, and what comes
  before is not read (``chain_broken``): the chain was not read whole.

Claude Code writes parallel tool calls as a branching tree (each result hangs off
the entry holding its ``tool_use``), so the walk alone misses some: an assistant
entry belongs to the chain when its ``message.id`` does, and a tool result when the
``tool_use`` it answers does. Sidechain entries (subagents, the summarizer) never
do. User and assistant entries still left off are an abandoned branch: one
``off_chain`` note per run of them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence

import attrs

from eventstore.claude_code._lines import Entry, Raw, Warnings, shown
from reducers import InvalidEvent


def main_chain(
    entries: Sequence[Entry], warnings: Warnings, after: After | None = None
) -> tuple[set[int], set[int]]:
    """Line numbers of the main chain's user and assistant entries, and of every entry
    the walk back from its leaf crossed (compact boundaries, attachments too). ``after``:
    the entries are a transcript's tail, which must go on from the chain read before
    (see :func:`tail_chain`)."""
    if after is not None:
        return tail_chain(entries, warnings, after)
    talk = [e for e in entries if e.type in ("user", "assistant")]
    if not talk:
        raise InvalidEvent(
            f"line {entries[0].line if entries else 1}: not a Claude Code transcript"
            " (no user or assistant entry)"
        )
    main = [e for e in talk if not _sidechain(e)]
    if not main:
        raise InvalidEvent(
            f"line {talk[0].line}: only sidechain entries (a subagent's or the summarizer's"
            " transcript), no session main chain"
        )
    linked = [e for e in entries if e.uuid is not None and not _sidechain(e)]
    by_uuid: dict[str, Entry] = {}
    for e in linked:
        by_uuid.setdefault(e.uuid or "", e)
    spine = _spine(main[-1], by_uuid, linked, warnings)
    return _widen(main, spine, warnings), spine


class Unresumable(Exception):
    """The tail cannot be read on its own; the whole file must be (the text says why)."""


@attrs.frozen(kw_only=True)
class After:
    """The main chain as an earlier read left it: its last entry's uuid, its last
    assistant message's id, the calls still open."""

    leaf: str
    message: str | None
    calls: frozenset[str]


def tail_chain(
    entries: Sequence[Entry], warnings: Warnings, after: After
) -> tuple[set[int], set[int]]:
    """:func:`main_chain` of the entries after ``after.leaf``: only where reading them
    alone gives what reading the whole file would. Unresumable otherwise: an entry that
    hangs off anything but the tail or that leaf (a branch, a rewind, a new root, a
    sidechain), that repeats the leaf, or that goes on with the leaf's message, a cycle,
    a kept segment that starts before the tail."""
    by_uuid = {e.uuid: e for e in entries if e.uuid is not None}
    for e in entries:
        _hangs_on(e, by_uuid, after)
    main = [e for e in entries if e.type in ("user", "assistant")]
    if not main:
        return set(), set()
    spine: set[int] = set()
    entry = main[-1]
    while entry.line not in spine:
        spine.add(entry.line)
        ref = _ref(entry)
        if ref == after.leaf:
            return _widen(main, spine, warnings, after.calls), spine
        entry = by_uuid[ref or ""]  # every entry hangs on the tail or the leaf: see above
    raise Unresumable(f"line {entry.line}: the chain runs in a cycle")


def _hangs_on(e: Entry, by_uuid: Mapping[str, Entry], after: After) -> None:
    if _sidechain(e):
        raise Unresumable(f"line {e.line}: a sidechain entry")
    if e.uuid is None:
        if e.type in ("user", "assistant"):
            raise Unresumable(f"line {e.line}: a {e.type} entry without a uuid")
        return
    if e.uuid == after.leaf:
        raise Unresumable(f"line {e.line}: repeats the last entry read")
    if e.type == "assistant" and after.message is not None and e.message_id == after.message:
        raise Unresumable(f"line {e.line}: the last assistant message read goes on")
    ref = _ref(e)
    found = by_uuid.get(ref) if ref is not None else None
    if ref != after.leaf and (found is None or found.line >= e.line):
        raise Unresumable(f"line {e.line}: hangs off {ref!r}, not the entries after line read")
    meta = e.raw.get("compactMetadata")
    segment = meta.get("preservedSegment") if isinstance(meta, dict) else None
    if segment is not None and not (
        isinstance(segment, dict)
        and all(segment.get(k) in by_uuid for k in ("headUuid", "tailUuid"))
    ):
        raise Unresumable(f"line {e.line}: keeps a segment from before the tail")


def _ref(e: Entry) -> str | None:
    """The uuid ``e`` follows: its parent's, else (a compaction) its logical parent's."""
    parent, logical = e.raw.get("parentUuid"), e.raw.get("logicalParentUuid")
    if isinstance(parent, str) and parent:
        return parent
    if parent is not None:
        return None  # not a uuid: the full read notes it
    return logical if isinstance(logical, str) and logical else None


def _sidechain(e: Entry) -> bool:
    return e.raw.get("isSidechain") is True


@attrs.frozen
class _Walk:
    """What the walk back needs: the entries by uuid, in file order, and those crossed."""

    by_uuid: Mapping[str, Entry]
    linked: Sequence[Entry]
    crossed: set[int]
    warnings: Warnings


def _spine(
    leaf: Entry, by_uuid: Mapping[str, Entry], linked: Sequence[Entry], warnings: Warnings
) -> set[int]:
    walk = _Walk(by_uuid, linked, set(), warnings)
    entry: Entry | None = leaf
    while entry is not None and entry.line not in walk.crossed:
        walk.crossed.add(entry.line)
        entry = _parent(entry, walk)
    return walk.crossed


def _parent(e: Entry, walk: _Walk) -> Entry | None:
    """The entry ``e`` follows on the chain (``None`` at its root), noting any guess."""
    parent, logical = e.raw.get("parentUuid"), e.raw.get("logicalParentUuid")
    if isinstance(parent, str) and parent:
        found = walk.by_uuid.get(parent)
        if found is None:
            return _broken(e, f"parent {parent!r} is in no entry", walk)
        if found.line in walk.crossed:
            return _broken(e, f"parent {parent!r} leads back to line {found.line} (a cycle)", walk)
        return found
    if parent is not None and not isinstance(parent, str):
        return _broken(e, f"parentUuid {shown(parent)} is not a uuid", walk)
    if not (isinstance(logical, str) and logical):
        return None
    return _logical(e, logical, walk)


def _broken(e: Entry, why: str, walk: _Walk) -> Entry | None:
    """No parent: ``e`` starts the chain (a ``chain_broken`` note saying ``why``)."""
    walk.warnings.note(
        "chain_broken", e.line, f"{why}: the chain starts here, nothing before it is read"
    )
    return None


def _logical(e: Entry, logical: str, walk: _Walk) -> Entry | None:
    """A boundary's logical parent, or the entry before it in file order (a note) when that
    names no entry before the boundary."""
    found = walk.by_uuid.get(logical)
    if found is not None and found.line < e.line and found.line not in walk.crossed:
        return found
    before = _before(e, walk.linked)
    if before is None or before.line in walk.crossed:
        return _broken(e, f"logicalParentUuid {logical!r} names no entry before the boundary", walk)
    why = "is in no entry" if found is None else f"names line {found.line}, not an entry before it"
    walk.warnings.note(
        "chain_fallback",
        e.line,
        f"logicalParentUuid {logical!r} {why}: the chain goes on from line {before.line},"
        " the last entry before the boundary",
    )
    return before


def _before(e: Entry, linked: Sequence[Entry]) -> Entry | None:
    """The last entry with a uuid before ``e`` in file order."""
    at = bisect.bisect_left([x.line for x in linked], e.line)
    return linked[at - 1] if at > 0 else None


def _widen(
    main: Sequence[Entry], spine: set[int], warnings: Warnings, open_calls: Iterable[str] = ()
) -> set[int]:
    """The spine plus the split parts of its messages and the results of its calls (and
    of ``open_calls``, opened before the entries read)."""
    message_ids = {e.message_id for e in main if e.line in spine and e.type == "assistant"} - {None}
    chain = {e.line for e in main if e.line in spine or e.message_id in message_ids}
    calls = {b["id"] for e in main if e.line in chain for b in blocks_of(e, "tool_use")}
    calls.update(open_calls)
    for e in main:
        results = blocks_of(e, "tool_result")
        if e.line not in chain and results and all(b["tool_use_id"] in calls for b in results):
            chain.add(e.line)
    run: list[int] = []
    for line in [*(e.line for e in main), None]:
        if line is not None and line not in chain:
            run.append(line)
        elif run:
            text = f"{len(run)} user/assistant entries off the main chain (an abandoned branch)"
            warnings.note("off_chain", run[0], text + " are not turns", count=len(run))
            run = []
    return chain


def blocks_of(entry: Entry, kind: str) -> list[Raw]:
    """The entry's content blocks of ``kind`` (``tool_use`` or ``tool_result``) that name
    a usable call id."""
    content = entry.message.get("content")
    if not isinstance(content, list):
        return []
    return [
        b
        for b in content
        if isinstance(b, dict)
        and b.get("type") == kind
        and _usable(b.get("id" if kind == "tool_use" else "tool_use_id"))
    ]


def _usable(call_id: object) -> bool:
    return isinstance(call_id, str) and bool(call_id.strip())
