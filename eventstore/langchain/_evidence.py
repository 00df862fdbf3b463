"""What a summary evidences, by the mention rule Claude Code ingest used. Pure.

Case and whitespace aside, on word boundaries: a pending rule is evidenced when the
summary holds its sentence; a negative fact when one line holds its key's short name
(the part after the last ``: ``) and a word for its disposition; an open call when
its id or its short name appears. The re-tell block (``_obligations``) is worded so
that this rule finds each of its lines.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

import attrs

from reducers import SessionState

WORDS: Mapping[str, tuple[str, ...]] = {
    "failed": ("fail", "error", "exit code", "could not", "cannot", "not found", "crash"),
    "rejected": ("reject", "declin", "denied", "refus", "interrupt", "stopped"),
    "superseded": ("supersed", "replaced", "instead", "abandon"),
}


@attrs.frozen(kw_only=True)
class Carried:
    """What a summary evidences, in the shape ``Session.compact`` takes."""

    calls: tuple[str, ...]
    constraints: tuple[str, ...]
    dispositions: Mapping[str, str]


def carried_by(state: SessionState, summary: str) -> Carried:
    """The open calls, pending rules and negative facts of ``state`` ``summary`` evidences."""
    text = _norm(summary)
    lines = [_norm(line) for line in summary.splitlines()]
    calls = (
        c.call_id
        for c in state.open_calls.values()
        if mentions(text, c.call_id) or mentions(text, short_name(c.name))
    )
    return Carried(
        calls=tuple(sorted(calls)),
        constraints=tuple(
            sorted(k for k, c in state.constraints.items() if mentions(text, c.text))
        ),
        dispositions={
            k: f.disposition
            for k, f in sorted(state.dispositions.items())
            if fact_evidenced(k, f.disposition, lines)
        },
    )


def short_name(key: str) -> str:
    """The part of a call's name or a fact's key a summary would mention."""
    short = key.rsplit(": ", 1)[-1].strip()
    return "" if short == "reply" else short


def fact_evidenced(key: str, disposition: str, lines: list[str]) -> bool:
    """Whether one normalised line holds the key's short name and a disposition word."""
    short = short_name(key)
    words = WORDS.get(disposition, (disposition,))
    return any(
        (not short or mentions(line, short)) and any(_word(w).search(line) for w in words)
        for line in lines
    )


def mentions(text: str, key: str) -> bool:
    """Whether normalised ``text`` holds ``key`` on word boundaries; never an empty key."""
    key = _norm(key)
    return bool(key) and _key(key).search(text) is not None


@functools.lru_cache(maxsize=4096)
def _key(key: str) -> re.Pattern[str]:
    before = r"(?<!\w)" if re.match(r"\w", key) else ""
    after = r"(?!\w)" if re.search(r"\w$", key) else ""
    return re.compile(before + re.escape(key) + after)


@functools.lru_cache(maxsize=64)
def _word(stem: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(stem))


def _norm(text: str) -> str:
    return " ".join(text.lower().split())
