"""Rules a person states in plain words: the one heuristic every integration reads them by.

A sentence that holds an imperative (never, don't, do not, always, must, only; German
niemals, muss; French jamais; Spanish nunca, siempre) states a rule; so does one with
German nicht, nie, immer or French toujours, which are also plain "not" and "still",
when it instructs (see :func:`states_rule`). Its constraint key says where it came from
and the sentence: its first ``KEY_CHARS`` characters and a hash of the whole when
longer, so two rules alike keep apart. Claude Code ingest adds what it alone knows
(files the user pointed to, text pasted from an earlier session); Codex ingest and the
LangChain middleware read what the user typed with it as it is. Pure.
"""

from __future__ import annotations

import hashlib
import re

from reducers import ConstraintStated

KEY_CHARS = 60
HEURISTIC = "heuristic"  # the source of a rule found in what the user typed
IMPERATIVE = re.compile(
    r"\b(?:never|do not|don'?t|always|must|only|niemals|muss|musst"
    r"|jamais|nunca|siempre)\b",
    re.IGNORECASE,
)
# Words that are also plain "not", "never", "still" (German nicht, nie, immer; French
# toujours; Polish nie): a rule only in a sentence that instructs (below)
WEAK = re.compile(r"\b(?:nicht|nie|immer|toujours)\b", re.IGNORECASE)
_INSTRUCTS = re.compile(
    r"\b(?:bitte|darf|darfst|dürfen|soll|sollst|sollen|sollte|solltest|müssen"
    r"|il faut|doit|dois|devez)\b|!\s*$",
    re.IGNORECASE,
)
_NOT_IMPERATIVE = frozenset(  # first words in -e that are no imperative
    {
        *("diese", "jene", "jede", "eine", "keine", "meine", "deine", "seine", "ihre"),
        *("unsere", "eure", "welche", "solche", "manche", "alle", "beide", "ganze", "habe"),
        *("hatte", "wieso", "weshalb", "cette", "comme", "quelle", "votre", "notre", "elle"),
    }
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def states_rule(sentence: str) -> bool:
    """Whether ``sentence`` holds an imperative: one of :data:`IMPERATIVE`, or a word of
    :data:`WEAK` in a sentence that instructs ("bitte", a modal of obligation, "!" at its
    end, an imperative first: "Verwende immer ...", "Ändern Sie nie ...", or the word
    first and an infinitive last: "Nie auf main pushen."), never in a
    question ("Ich weiß nicht, warum ...", "Le test échoue toujours" state no rule)."""
    if IMPERATIVE.search(sentence):
        return True
    if not WEAK.search(sentence) or sentence.rstrip().endswith("?"):
        return False
    words = re.findall(r"\w+", sentence.lower())
    imperative = bool(words) and (
        (len(words[0]) > 3 and words[0].endswith("e") and words[0] not in _NOT_IMPERATIVE)
        or (len(words) > 1 and words[0].endswith("n") and words[1] == "sie")
    )
    infinitive = WEAK.fullmatch(words[0]) is not None and words[-1].endswith("en")
    return imperative or infinitive or bool(_INSTRUCTS.search(sentence))


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
        if states_rule(s)
    ]
