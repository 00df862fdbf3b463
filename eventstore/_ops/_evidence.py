"""The evidence matcher: does a compaction summary state an obligation in substance? Pure.

Every integration that reads someone else's sessions (Claude Code, Codex, LangChain)
judges summaries with it, so their reviews agree on what "evidenced" means.

A summary is free text, so what it carries is judged from its words, read across the
whole summary (not one line), sentence by sentence. Words are lower-cased, split on
anything but letters, digits and ``_ . / -``, cut to their first five characters
(``failed``, ``failure`` and ``fails`` match; ``repository`` and ``repo`` do not),
and a path also counts by its last component (``notes.txt`` for ``docs/notes.txt``).
Common words (``the``, ``to``, ``with``, ...) never count.

- **A rule** (a pending constraint) is evidenced when one sentence holds at least
  60% of the rule's own words and, for a prohibition, a word of prohibition (never,
  not, don't, avoid, nie, instead, ...): "the user asked never to modify files under
  /etc" evidences "Never modify files under /etc.". Where two pending rules differ in
  a few words, the sentence must hold one of the words only this rule has.
- **A failed or refused attempt** is evidenced when one sentence names what was
  attempted (the command's words, or the path) *and* says it went wrong: a word of
  failure or refusal (fail, error, refused, denied, interrupted, ...) or half the
  words of the error line itself. A sentence naming the same file without saying
  anything went wrong is no evidence ("edited notes.txt" does not carry a failed
  Edit of notes.txt).
- **A user correction** or **interruption** is evidenced when one sentence holds half
  the words the user typed, or names what was interrupted with a word of refusal.
- **An attempt resolved later** (a later success of the same call) is not an
  obligation: it counts as carried, with its ``superseded`` disposition.
- **An open call** is evidenced when the summary names its call id, or one sentence
  names what it attempted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import attrs

from reducers import SessionState

RESOLVED = "resolved later"  # the reason of an attempt a later success resolved
STEM = 5
RULE_SHARE = 0.6
ERROR_SHARE = 0.5
_WORD = re.compile(r"[a-z0-9_./-]+|[^\W\d_]+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+|(?<=:)\s+(?=[-*\d])")
_LINE = re.compile(r"\(line \d+\)$")


def _vocab(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP = _vocab(
    "a an and are as at be been by do does for from had has have i if in into is it its"
    " of on or so that the their them then there these this to was were which will with"
    " you your we our me my he she they what when where who why how all any can could"
    " should would may might also just first before after up out over more most set use"
    " used using please bitte die der das den und ich mir zeig le la les un une et de du"
    " des"
)
# A word ending in * is a stem (``fail*``: failed, failure); any other must be the word.
PROHIBITION = _vocab(  # instead, rather, only: a rule said as its alternative
    "never not dont avoid* without forbid* prohib* must no nie niemals nicht kein keine"
    " jamais pas nunca instead rather only nothing none"
)
FAILURE = _vocab(
    "fail* error* exit couldnt cannot cant unable broke crash* missing found exist*"
    " denied refus* reject* declin* interr* stopp* block* permi* abort* timeout"
)
REFUSAL = _vocab(
    "refus* reject* declin* denied interr* stopp* block* permi* abort* didnt wrong correct*"
)


@attrs.frozen(kw_only=True)
class Carried:
    """What a summary evidences, in the shape ``Session.compact`` takes."""

    calls: tuple[str, ...]
    constraints: tuple[str, ...]
    dispositions: Mapping[str, str]


def carried_by(state: SessionState, summary: str) -> Carried:
    """The open calls, pending rules and negative facts of ``state`` the summary states."""
    sentences = sentences_of(summary)
    text = summary.lower()
    return Carried(
        calls=tuple(
            sorted(
                c.call_id
                for c in state.open_calls.values()
                if c.call_id.lower() in text or _names(sentences, subject_of(c.name))
            )
        ),
        constraints=_rules(sentences, {k: c.text for k, c in state.constraints.items()}),
        dispositions={
            k: d.disposition
            for k, d in sorted(state.dispositions.items())
            if resolved_later(d.disposition, d.reason)
            or fact_kept(sentences, k, d.disposition, d.reason)
        },
    )


def resolved_later(disposition: str, reason: str) -> bool:
    """Whether a negative fact is an attempt a later success resolved."""
    return disposition == "superseded" and reason.startswith(RESOLVED)


def sentences_of(summary: str) -> list[frozenset[str]]:
    """The summary's sentences (and list items), each as its words."""
    return [words(s) for s in _SENTENCE.split(summary) if s.strip()]


def words(text: str) -> frozenset[str]:
    """The words of ``text`` as the matcher compares them (see the module doc)."""
    out: set[str] = set()
    for raw in _WORD.findall(text.lower().replace("'", "").replace("\u2019", "")):
        w = raw.strip("./-")
        if not w or w in STOP:
            continue
        out.add(w[:STEM])
        if "/" in w:
            out.add(w.rsplit("/", 1)[-1][:STEM])
    return frozenset(out)


def subject_of(key: str) -> str:
    """What an attempt or call attempted: its key without the tool, the kind of fact and
    the line (``Bash: git add -A (line 34)`` -> ``git add -A``)."""
    key = _LINE.sub("", key).strip()
    for prefix in ("interrupted: ", "corrected: "):
        key = key.removeprefix(prefix)
    return key.split(": ", 1)[-1] if ": " in key else ""


def _rules(sentences: Sequence[frozenset[str]], rules: Mapping[str, str]) -> tuple[str, ...]:
    """The keys of the rules the summary states; a rule's words no other rule has (if
    any) must be in the sentence, so two rules alike but for one word keep apart."""
    own = {k: words(text) for k, text in rules.items()}
    kept = []
    for k, mine in own.items():
        others = frozenset().union(*(w for o, w in own.items() if o != k))
        if rule_kept(sentences, rules[k], mine - others):
            kept.append(k)
    return tuple(sorted(kept))


def rule_kept(
    sentences: Sequence[frozenset[str]], rule: str, distinct: frozenset[str] = frozenset()
) -> bool:
    """Whether one sentence holds most of the rule's words, its prohibition (if it has
    one) and one of its ``distinct`` words (if given)."""
    own = words(rule)
    banned = {w for w in own if _cued(w, PROHIBITION)}
    needed = own - banned
    if not needed:
        return False
    return any(
        _share(needed, s) >= RULE_SHARE
        and (not banned or _says(s, PROHIBITION))
        and (not distinct or bool(distinct & s))
        for s in sentences
    )


def fact_kept(sentences: Sequence[frozenset[str]], key: str, disposition: str, reason: str) -> bool:
    """Whether one sentence states the failed attempt (see the module doc)."""
    quote = reason.split(": ", 1)[-1]
    if key.startswith("corrected: "):
        return any(_share(words(quote), s) >= ERROR_SHARE for s in sentences)
    subject = words(subject_of(key))
    cues = REFUSAL if disposition == "rejected" else FAILURE | REFUSAL
    error = words(quote)
    for s in sentences:
        named = subject and _share(subject, s) >= RULE_SHARE
        if key.startswith("interrupted: ") and not subject:
            named = True
        said = _says(s, cues) or (bool(error) and _share(error, s) >= ERROR_SHARE)
        if named and said:
            return True
    return False


def _names(sentences: Iterable[frozenset[str]], subject: str) -> bool:
    own = words(subject)
    return bool(own) and any(_share(own, s) >= ERROR_SHARE for s in sentences)


def _share(own: frozenset[str], sentence: frozenset[str]) -> float:
    return len(own & sentence) / len(own) if own else 0.0


def _cued(word: str, cues: frozenset[str]) -> bool:
    """Whether a (cut) word is one of ``cues`` (a stem, ``fail*``, or a whole word)."""
    return any(
        word.startswith(c[:-1][:STEM]) if c.endswith("*") else word == c[:STEM] for c in cues
    )


def _says(sentence: frozenset[str], cues: frozenset[str]) -> bool:
    return any(_cued(w, cues) for w in sentence)
