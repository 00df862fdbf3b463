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

Case-insensitive substring matches throughout. Pure.
"""

from __future__ import annotations

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
                if c.call_id.lower() in text or _found(short_name(c.name), text)
            )
        ),
        constraints=tuple(sorted(k for k, c in state.constraints.items() if _norm(c.text) in text)),
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
    short = _norm(short_name(key))
    words = WORDS.get(disposition, (disposition,))
    return any((not short or short in line) and any(w in line for w in words) for line in lines)


def _found(short: str, text: str) -> bool:
    return bool(short) and _norm(short) in text


def _norm(text: str) -> str:
    return " ".join(text.lower().split())
