"""The mention rule: what a compaction summary evidences, decided conservatively.

A summary is free text, so what it carries is read off it by a rule a person can
check in a minute, and that errs towards "not evidenced":

- an open call is evidenced when its short key (``git push``, a file path, a
  skill name; the part after ``Tool: `` in its name) or its call id appears in
  the summary;
- a pending rule is evidenced when the summary contains its sentence (case and
  whitespace aside);
- a negative fact is evidenced when one line of the summary holds both its
  short key and a word for its disposition (failed: fail, error, exit code, ...;
  rejected: reject, declin, denied, interrupt, ...). An interruption of no call
  (``interrupted: reply``) needs only the word.

Case-insensitive, whitespace runs read as one space, and on word boundaries: a
key, call id or rule appears only where the characters around it are not
letters, digits or ``_`` (so ``rm`` is not in "performance", nor ``ls`` in
"tools"; ``git push`` is in "`git push` failed"), and a disposition word starts a
word and may end inside one (``fail`` in "failed", not in "unfailing"). Pure.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

import attrs

from reducers import SessionState

WORDS: Mapping[str, tuple[str, ...]] = {
    "failed": (
        "fail",
        "error",
        "exit code",
        "could not",
        "couldn't",
        "cannot",
        "can't",
        "not found",
        "does not exist",
        "crash",
        "broke",
    ),
    "rejected": (
        "reject",
        "declin",
        "denied",
        "refus",
        "interrupt",
        "didn't want",
        "did not want",
        "doesn't want",
        "stopped",
    ),
    "superseded": ("supersed", "replaced", "instead", "abandon"),
}


@attrs.frozen(kw_only=True)
class Carried:
    """What a summary evidences, in the shape ``Session.compact`` takes."""

    calls: tuple[str, ...]
    constraints: tuple[str, ...]
    dispositions: Mapping[str, str]


def carried_by(state: SessionState, summary: str) -> Carried:
    """The open calls, pending rules and negative facts of ``state`` that ``summary``
    evidences under the mention rule."""
    text = _norm(summary)
    lines = [_norm(line) for line in summary.splitlines()]
    return Carried(
        calls=tuple(
            sorted(
                c.call_id
                for c in state.open_calls.values()
                if mentions(text, c.call_id) or mentions(text, short_name(c.name))
            )
        ),
        constraints=tuple(
            sorted(k for k, c in state.constraints.items() if mentions(text, c.text))
        ),
        dispositions={
            k: d.disposition
            for k, d in sorted(state.dispositions.items())
            if fact_evidenced(k, d.disposition, lines)
        },
    )


def short_name(key: str) -> str:
    """The part of a call's name or a fact's key a summary would mention."""
    short = key.rsplit(": ", 1)[-1].strip()
    return "" if short == "reply" else short


def fact_evidenced(key: str, disposition: str, lines: list[str]) -> bool:
    """Whether one (normalised) summary line holds the key's short name and a
    word for ``disposition``."""
    short = short_name(key)
    words = WORDS.get(disposition, (disposition,))
    return any(
        (not short or mentions(line, short)) and any(_word(w).search(line) for w in words)
        for line in lines
    )


def mentions(text: str, key: str) -> bool:
    """Whether (normalised) ``text`` holds ``key`` on word boundaries; never an empty key."""
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
