"""The re-tell: one ``system`` turn that gives the working context back what it owes.

``write_block`` is pure: the owed obligations (``invariants.owed``), the raw turns
they were raised after, a character limit -> the block a model reads (one line
each: kind, key, status or disposition, what it says, and a quote of where it was
raised) and which obligations it states. ``retell`` is the decision: the turn and a
``Retold`` event recording what it evidences, so ``owed()`` is empty afterwards
unless the limit cut it, and a replay re-derives both byte for byte.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from eventstore._commands import Retell
from eventstore._decision import Decision
from eventstore._effects import Effects
from eventstore._values import Retelling
from invariants import Owed, owed, validate
from reducers import (
    InvalidArgument,
    Retold,
    SessionState,
    TurnAppended,
    constraint_digest,
    fold,
)

HEADER = "tierlog re-tell: the working context no longer holds these; they still apply:"
QUOTE_CHARS = 80
MIN_LINE = 80  # a first owed line is cut to the room left, if at least this much
ROLE = "system"


@attrs.frozen(kw_only=True)
class Block:
    """A re-tell block: its text, the obligations it states, those left out."""

    text: str
    told: tuple[Owed, ...]
    left: tuple[Owed, ...]


def write_block(
    owed: Sequence[Owed], quotes: Mapping[int, str], max_chars: int | None = None
) -> Block:
    """The block stating ``owed`` in order while it fits in ``max_chars`` characters;
    ``quotes`` maps a turn index to its content. A first line longer than the room left
    (a rule pasted as one long paragraph) is cut to it, ending in ``...``, so long as
    ``MIN_LINE`` characters of it fit; InvalidArgument if not even that fits (nothing
    would be re-told)."""
    lines = [HEADER]
    size = len(HEADER)
    for n, o in enumerate(owed):
        line = line_of(o, quotes.get(o.turn) if o.turn is not None else None)
        if max_chars is not None and size + 1 + len(line) > max_chars:
            if n > 0:
                return Block(text="\n".join(lines), told=tuple(owed[:n]), left=tuple(owed[n:]))
            line = _first_cut(line, max_chars - size - 1)
        lines.append(line)
        size += 1 + len(line)
    return Block(text="\n".join(lines), told=tuple(owed), left=())


def _first_cut(line: str, room: int) -> str:
    """The first owed line cut to ``room`` characters, or InvalidArgument when fewer than
    ``MIN_LINE`` fit."""
    if room < MIN_LINE:
        raise InvalidArgument(
            f"max_chars: {room + len(HEADER) + 1} cannot hold the first owed obligation"
            f" ({len(HEADER) + 1 + len(line)} characters with the header; at least"
            f" {len(HEADER) + 1 + MIN_LINE} to cut it)"
        )
    return line[: room - 3] + "..."


def line_of(o: Owed, content: str | None) -> str:
    """One obligation as a line: what it is, its status, what it says, where it was raised."""
    key, text = one_line(o.key), one_line(o.text)
    if o.kind == "constraint":
        head = f"- constraint {key} (pending): {text}"
    elif o.kind == "negative_fact":
        head = f"- approach {key} was {one_line(o.status)}: {text}"
    else:
        head = f"- call {key} is still open ({one_line(o.call_kind or '')}, no result yet): {text}"
    verb = "opened" if o.kind == "open_call" else "raised"
    where = f"{verb} at v{o.version}" if o.turn is None else f"{verb} after turn {o.turn}"
    if o.turn is not None and o.version:
        where += f" (v{o.version})"
    said = f': "{quote(content, o.key)}"' if content else ""
    return f"{head} [{where}{said}]"


def quote(content: str, key: str) -> str:
    """The line of ``content`` naming ``key`` (else its first line), on one line, cut."""
    lines = [x for x in content.splitlines() if x.strip()] or [content]
    line = next((x for x in lines if key in x), lines[0])
    text = one_line(line)
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 3] + "..."


def one_line(text: str) -> str:
    """``text`` as one line a model and a terminal read as written: each run of
    whitespace (line breaks included) one space, each other control or format
    character or bidi control (an escape, a right-to-left override) written out as
    ``\\uXXXX``."""
    return "".join(
        f"\\u{ord(c):04x}" if c in _BIDI or unicodedata.category(c) in ("Cc", "Zl", "Zp") else c
        for c in " ".join(text.split())
    )


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def estimate_tokens(text: str) -> int:
    """A re-tell's tokens when the runtime gives none: one per 4 UTF-8 bytes, rounded up."""
    return (len(text.encode()) + 3) // 4


def retold_event(index: int, block: Block, max_chars: int | None) -> Retold:
    """The ``Retold`` event recording what turn ``index`` (the block) evidences."""
    return Retold(
        index=index,
        constraints={o.key: constraint_digest(o.key, o.text) for o in _of(block, "constraint")},
        dispositions={o.key: o.status for o in _of(block, "negative_fact")},
        calls=tuple(o.key for o in _of(block, "open_call")),
        max_chars=max_chars,
        cut=len(block.left),
    )


def _of(block: Block, kind: str) -> Iterable[Owed]:
    return (o for o in block.told if o.kind == kind)


def retell(command: Retell, state: SessionState, effects: Effects) -> Decision[Retelling | None]:
    """The re-tell turn and its ``Retold`` event; nothing when nothing is owed."""
    found = owed(state)
    if not found:
        return Decision(events=(), state=state, result=None)
    turns = sorted({o.turn for o in found if o.turn is not None})
    quotes = {t["index"]: t["content"] for t in effects.turns(state, [(i, i + 1) for i in turns])}
    block = write_block(found, quotes, command.max_chars)
    tokens = estimate_tokens(block.text) if command.tokens is None else command.tokens
    turn = TurnAppended(index=state.turns, role=ROLE, content=block.text, tokens=tokens)
    validate(state, turn)
    told = retold_event(turn.index, block, command.max_chars)
    after = fold((turn, told), state, check=validate)
    result = Retelling(
        index=turn.index,
        role=ROLE,
        content=block.text,
        tokens=tokens,
        tok_start=after.tok_starts[turn.index],
        told=block.told,
        still_owed=block.left,
    )
    return Decision(events=(turn, told), state=after, result=result)


def owed_json(found: Sequence[Owed], told: Retelling | None) -> dict[str, Any]:
    """What ``tierlog owed --json`` prints: every owed obligation, the block, and the
    keys the block could not hold (``max_chars``)."""
    return {
        "owed": [attrs.asdict(o) for o in found],
        "block": told.content if told is not None else "",
        "still_owed": [[o.kind, o.key] for o in (told.still_owed if told else found)],
    }
