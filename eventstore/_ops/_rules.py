"""Rules a person states in plain words: the one heuristic every integration reads them by.

A sentence that holds an imperative (never, don't, do not, always, must, only; German
niemals, nie, immer, muss, nicht; French jamais, toujours; Spanish nunca, siempre)
states a rule. Its constraint key says where it came from and the sentence: its first
``KEY_CHARS`` characters and a hash of the whole when longer, so two rules alike keep
apart. Claude Code ingest adds what it alone knows (files the user pointed to, text
pasted from an earlier session); Codex ingest and the LangChain middleware read what
the user typed with it as it is. Pure.
"""

from __future__ import annotations

import hashlib
import re

from reducers import ConstraintStated

KEY_CHARS = 60
HEURISTIC = "heuristic"  # the source of a rule found in what the user typed
IMPERATIVE = re.compile(
    r"\b(?:never|do not|don'?t|always|must|only|niemals|nie|immer|muss|musst|nicht"
    r"|jamais|toujours|nunca|siempre)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def rule_key(source: str, sentence: str) -> str:
    """A rule's constraint key: where it came from and the sentence, or its start and a
    hash of the whole when longer than ``KEY_CHARS``."""
    if len(sentence) <= KEY_CHARS:
        return f"{source}: {sentence}"
    digest = hashlib.sha256(sentence.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{source}: {sentence[:KEY_CHARS]}... #{digest}"


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (and its lines), each with its whitespace collapsed."""
    return [s for s in (" ".join(x.split()) for x in _SENTENCE.split(text)) if s]


def stated_rules(text: str) -> list[ConstraintStated]:
    """The sentences of ``text`` that state a rule, as pending constraints keyed
    ``heuristic: <sentence>``."""
    return [
        ConstraintStated(key=rule_key(HEURISTIC, s), text=s)
        for s in sentences(text)
        if IMPERATIVE.search(s)
    ]
