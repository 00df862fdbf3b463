"""The items a transcript's main chain reads as, and the pass that settles them in order.

Settling decides, from what is in the file up to each point only, two things the
entries leave open (so a transcript read while it is still being written settles as
the start of what it settles as later):

- a ``compact_boundary`` takes its place where its summary is; one the main chain
  goes on from without a summary, or whose summary is not in the file yet, is no
  compaction (a warning);
- text the user typed while the agent worked (a ``queue-operation`` enqueue) is
  read when Claude Code takes it off the queue (``remove``, paired with the latest
  text still queued and not yet delivered): if the next message is a user entry
  saying it (or running it, for a ``/command``), that entry is the turn; otherwise
  the agent got it along with its work and it is a turn of its own, there. Text
  never taken off the queue is no turn: it arrives as an entry when it is delivered.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

import attrs

from eventstore.claude_code._blocks import Block, text_of
from eventstore.claude_code._lines import Warnings


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
    """Text the user typed while the agent worked that never arrived as an entry of its own;
    ``line`` is where it was typed."""

    line: int
    text: str


@attrs.frozen(kw_only=True)
class Dequeued:
    """A ``remove`` queue operation: Claude Code took the latest queued text off the queue."""

    line: int


@attrs.frozen(kw_only=True)
class Boundary:
    """A ``compact_boundary`` of the main chain and the summary Claude Code resumed from."""

    line: int
    trigger: str
    pre_tokens: int | None
    summary: str
    kept_from: int | None = None  # the line of the first message kept verbatim after it
    kept: int = 0  # the turns before it Claude Code kept verbatim (set by the plan)


Item: TypeAlias = Message | Queued | Boundary
Raw: TypeAlias = Message | Queued | Dequeued | Boundary  # Queued: an enqueue, not yet settled


def pending_boundary(line: int) -> str:
    """The warning for a boundary whose summary the file does not hold yet."""
    return (
        f"line {line}: compact boundary whose summary is not in the file yet (a session"
        " still being written?): not compacted"
    )


@attrs.define
class _Settling:
    out: list[Item] = attrs.field(factory=list)
    boundary: Boundary | None = None  # still without its summary
    queued: list[Queued] = attrs.field(factory=list)  # enqueued, not taken off yet
    taken: Queued | None = None  # taken off the queue: delivered by the next message?
    held: list[Message] = attrs.field(factory=list)  # instructions, re-tells after a boundary


def settle(items: Iterable[Raw], warnings: Warnings, queued: Iterable[Queued] = ()) -> list[Item]:
    """The items in order, boundaries with their summaries, queued text decided (see the
    module doc). ``queued``: text still queued before the first item."""
    return _settle(items, warnings, queued)[0]


def settled_at(items: Iterable[Raw], queued: Iterable[Queued] = ()) -> tuple[int, list[Queued]]:
    """How many items :func:`settle` gives for ``items``, and the text still queued after
    them; ``-1`` items when anything else is still open there (a boundary without its
    summary, text taken off the queue, messages held for a boundary)."""
    out, s = _settle(items, Warnings(), queued)
    clear = s.boundary is None and s.taken is None and not s.held
    return (len(out) if clear else -1), list(s.queued)


def _settle(
    items: Iterable[Raw], warnings: Warnings, queued: Iterable[Queued]
) -> tuple[list[Item], _Settling]:
    s = _Settling(queued=list(queued))
    for item in items:
        if isinstance(item, Queued):
            s.queued.append(item)
        elif isinstance(item, Dequeued):
            _dequeue(s, item.line, warnings)
        elif isinstance(item, Boundary):
            _unsummarised(s, warnings)
            s.boundary = item
        else:
            _message(s, item, warnings)
    if s.boundary is not None:
        warnings.append(pending_boundary(s.boundary.line))
    if s.taken is not None:
        warnings.append(
            f"line {s.taken.line}: queued text taken off the queue as the file ends: not"
            " known yet whether it arrives as an entry, so not a turn",
        )
    if s.queued:
        warnings.append(
            f"line {s.queued[0].line}: queued text never taken off the queue is not a turn",
            kind="queued",
        )
    return list(s.out), s


def _dequeue(s: _Settling, line: int, warnings: Warnings) -> None:
    if s.taken is not None:  # no message came in between: it went along with the work
        s.out.append(s.taken)
    s.taken = s.queued.pop() if s.queued else None
    if s.taken is None:
        warnings.note("queue", line, "a queue remove with nothing queued, ignored", fold="rm")


def _message(s: _Settling, m: Message, warnings: Warnings) -> None:
    if m.role in ("instructions", "retell"):  # after a boundary: they follow its compaction
        (s.held if s.boundary is not None else s.out).append(m)
        return
    if s.taken is not None:
        if not (m.role == "user" and _says(m, s.taken.text)):
            s.out.append(s.taken)
        s.taken = None
    if m.role == "user":  # delivered as an entry of its own: no longer waiting
        s.queued = [q for q in s.queued if not _says(m, q.text)]
    if m.role == "summary":
        if s.boundary is None:
            warnings.note("no_summary", m.line, "a compact summary without a boundary, skipped")
        else:
            s.out.append(attrs.evolve(s.boundary, summary=text_of(m.blocks)))
            s.boundary = None
            s.out += s.held
            s.held = []
        return
    _unsummarised(s, warnings)
    s.out.append(m)


def _unsummarised(s: _Settling, warnings: Warnings) -> None:
    if s.boundary is not None:
        warnings.note("no_summary", s.boundary.line, "compact boundary without a summary skipped")
        s.boundary = None
    s.out += s.held
    s.held = []


def _says(m: Message, text: str) -> bool:
    """Whether a user message is ``text`` (or runs it, for a ``/command``)."""
    wanted, said = text.strip(), text_of(m.blocks).strip()
    if wanted[:1] == "/" and wanted.split():
        return said == wanted or f"<command-name>{wanted.split()[0]}</command-name>" in said
    return said == wanted
