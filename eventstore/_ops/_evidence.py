"""The evidence matcher: does a compaction summary state an obligation in substance? Pure.

Every integration that reads someone else's sessions (Claude Code, Codex, LangChain)
judges summaries with it, so their reviews agree on what "evidenced" means.

A summary is free text, so what it carries is judged from its words, read across the
whole summary (not one line), sentence by sentence. Words are lower-cased, split on
anything but letters, digits and ``_ . / -``, lose one ending (``-ing``, ``-ed``,
``-es``, ``-s``) and are cut to their first five characters (``pushed`` and ``push``,
``committing`` and ``commit`` match; ``repository`` and ``repo`` do not); a path also
counts by its last component (``notes.txt`` for ``docs/notes.txt``). Common words
(``the``, ``to``, ``with``, ...) never count.

- **A rule** (a pending constraint) is evidenced when one sentence holds at least
  60% of the rule's own words and, for a prohibition, a word of prohibition (never,
  not, don't, avoid, nie, instead, ...): "the user asked never to modify files under
  /etc" evidences "Never modify files under /etc.". Where two pending rules differ in
  a few words, the sentence must hold one of the words only this rule has.
- **A failed or refused attempt** is evidenced when one sentence, read with the
  headings it sits under (a line ending in ``:`` such as "Errors encountered:", and
  the list items it is nested in), names what was attempted *and* says it went wrong.
  *Named*: 60% of the command's words and paths (quoted arguments such as a commit
  message, redirections and one-letter flags left out), or a command's verb with its
  program (``git push``; a verb of five letters or more alone: ``commit``, ``credo``),
  or two words of its error that errors in general do not have: five letters or more
  (``dialyzer``, ``cyclomatic complexity``), or the check a tag names (``[MYPY]``).
  *Went wrong*: a word of failure or refusal (fail, error, blocked, denied, fixed,
  interrupted, fehlgeschlagen, échoué, ...) not under a negation ("did not fail",
  "without errors", "no problems"; "didn't run it" is not a failure, "didn't work"
  is), or half the words of the error excerpt. A sentence naming the same
  file without saying anything went wrong is no evidence ("edited notes.txt" does not
  carry a failed Edit of notes.txt).
- **A user correction** or **interruption** is evidenced when one sentence holds half
  the words the user typed, or names what was interrupted (or says the user
  interrupted) with a word of refusal.
- **An attempt resolved later** (a later success of the same call) is not an
  obligation: it counts as carried, with its ``superseded`` disposition.
- **An open call** is evidenced when the summary names its call id, or one sentence
  names what it attempted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

import attrs

from eventstore._ops._words import (
    FAILURE,
    GENERIC_STEMS,
    INTERRUPTED,
    OBLIGED,
    PROHIBITION,
    REFUSAL,
    REPEATED,
    STEM,
    TAG,
    cued,
    names,
    says,
    sentences_of,
    share,
    stem,
    units_of,
    words,
)
from reducers import SessionState


class _Raised(Protocol):
    @property
    def position(self) -> int: ...


_F = TypeVar("_F", bound=_Raised)

RESOLVED = "resolved later"  # the reason of an attempt a later success resolved
RULE_SHARE = 0.6
ERROR_SHARE = 0.5
VERB_ALONE = 5  # a command verb this long names the command without its program
_LINE = re.compile(r"\(line \d+\)$")
_QUOTED = re.compile(r"\"[^\"]*(?:\"|$)|'[^']*(?:'|$)|`[^`]*(?:`|$)")
_SHELL_SPLIT = re.compile(r"&&|\|\||[;|]")
_NOISE = re.compile(r"^(?:\d*[<>]&?\S*|-\w{1,2}|\w+=\S*)$")  # redirects, -A, env settings
_VERB = re.compile(r"^[a-z][a-z-]*$")


@attrs.frozen(kw_only=True)
class Carried:
    """What a summary evidences, in the shape ``Session.compact`` takes."""

    calls: tuple[str, ...]
    constraints: tuple[str, ...]
    dispositions: Mapping[str, str]


def carried_by(state: SessionState, summary: str) -> Carried:
    """The open calls, pending rules and negative facts of ``state`` the summary states."""
    sentences = sentences_of(summary)
    facts = [(k, d.disposition, d.reason) for k, d in sorted_by_position(state.dispositions)]
    kept = facts_kept(units_of(summary), facts) if facts else frozenset()
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
            if resolved_later(d.disposition, d.reason) or k in kept
        },
    )


def resolved_later(disposition: str, reason: str) -> bool:
    """Whether a negative fact is an attempt a later success resolved."""
    return disposition == "superseded" and reason.startswith(RESOLVED)


def subject_of(key: str) -> str:
    """What an attempt or call attempted: its key without the tool, the kind of fact and
    the line (``Bash: git add -A (line 34)`` -> ``git add -A``)."""
    key = _LINE.sub("", key).strip()
    for prefix in ("interrupted: ", "corrected: "):
        key = key.removeprefix(prefix)
    return key.split(": ", 1)[-1] if ": " in key else ""


def commands(subject: str) -> list[list[str]]:
    """The simple commands of a shell line, each as its words: quoted arguments (a
    commit message), redirections, one-letter flags and a word cut short (``pr...``)
    left out."""
    if subject.endswith("..."):
        subject = subject[:-3].rsplit(None, 1)[0] if " " in subject else ""
    out = []
    for part in _SHELL_SPLIT.split(_QUOTED.sub(" ", subject)):
        tokens = [t for t in part.split() if not _NOISE.match(t)]
        if tokens:
            out.append(tokens)
    return out


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
    """Whether one sentence holds the rule (most of its words, or every path and code
    span it names with a word of obligation), its prohibition (if it has one) and one
    of its ``distinct`` words (if given)."""
    own = words(rule)
    banned = {w for w in own if cued(w, PROHIBITION)}
    needed, named = own - banned, names(rule)
    if not needed:
        return False
    return any(
        (share(needed, s) >= RULE_SHARE or (bool(named) and named <= s and says(s, OBLIGED)))
        and (not banned or says(s, PROHIBITION))
        and (not distinct or bool(distinct & s))
        for s in sentences
    )


def fact_kept(units: Sequence[frozenset[str]], key: str, disposition: str, reason: str) -> bool:
    """Whether one sentence (with its headings: :func:`units_of`) states the failed
    attempt (see the module doc)."""
    return bool(_stating(units, key, disposition, reason))


def facts_kept(
    units: Sequence[frozenset[str]], facts: Iterable[tuple[str, str, str]]
) -> frozenset[str]:
    """The keys of ``facts`` (key, disposition, reason; in the order they happened) the
    summary states. Attempts at the same thing share the sentences that state them: a
    sentence that says it happened more than once (twice, both, again, multiple, ...)
    states them all, any other states one (the earliest not stated yet)."""
    kept: set[str] = set()
    used: dict[str, set[int]] = {}
    for key, disposition, reason in facts:
        hits = _stating(units, key, disposition, reason)
        taken = used.setdefault(_LINE.sub("", key).strip(), set())
        if any(says(units[i], REPEATED) for i in hits):
            kept.add(key)
        elif free := [i for i in hits if i not in taken]:
            kept.add(key)
            taken.add(free[0])
    return frozenset(kept)


def _stating(units: Sequence[frozenset[str]], key: str, disposition: str, reason: str) -> list[int]:
    """The indexes of the units that state the fact."""
    quote = reason.split(": ", 1)[-1]
    if key.startswith("corrected: "):
        return [i for i, s in enumerate(units) if share(words(quote), s) >= ERROR_SHARE]
    attempt = Attempt.of(key, quote)
    cues = REFUSAL if disposition == "rejected" else FAILURE | REFUSAL
    return [
        i
        for i, s in enumerate(units)
        if attempt.named(s) and (says(s, cues) or attempt.error_said(s))
    ]


def sorted_by_position(facts: Mapping[str, _F]) -> list[tuple[str, _F]]:
    """``facts`` in the order they were raised."""
    return sorted(facts.items(), key=lambda kv: (kv[1].position, kv[0]))


@attrs.frozen(kw_only=True)
class Attempt:
    """A failed attempt as the matcher reads it: what it ran and what its error said."""

    subject: frozenset[str]  # the command's words and paths
    verbs: tuple[tuple[str, str], ...]  # (program, verb) of each simple command
    error: frozenset[str]  # the error excerpt's words
    own: frozenset[str]  # its words no error in general has
    interrupted: bool

    @classmethod
    def of(cls, key: str, quote: str) -> Attempt:
        """The attempt a fact's key and quoted error describe."""
        parts = commands(subject_of(key))
        verbs = tuple(
            (stem(p), stem(v)) for p, v, *_ in (c for c in parts if len(c) > 1) if _VERB.match(v)
        )
        error = words(quote)
        return cls(
            subject=words(" ".join(" ".join(c) for c in parts)),
            verbs=verbs,
            error=error,
            own=frozenset(w for w in error if len(w) == STEM and not _said_by_any(w))
            | words(" ".join(TAG.findall(quote))),
            interrupted=key.startswith("interrupted: "),
        )

    def named(self, unit: frozenset[str]) -> bool:
        """Whether ``unit`` names this attempt (see the module doc)."""
        if self.subject and share(self.subject, unit) >= RULE_SHARE:
            return True
        if any(v in unit and (p in unit or len(v) >= VERB_ALONE) for p, v in self.verbs):
            return True
        if self.interrupted and "user" in unit and says(unit, INTERRUPTED):
            return True
        return len(self.own & unit) >= 2

    def error_said(self, unit: frozenset[str]) -> bool:
        """Whether ``unit`` holds half the words of the error excerpt."""
        return bool(self.error) and share(self.error, unit) >= ERROR_SHARE


def _said_by_any(word: str) -> bool:
    """Whether an error's word says nothing of which attempt it was (file, failed, ...)."""
    return word in GENERIC_STEMS or cued(word, FAILURE)


def _names(sentences: Iterable[frozenset[str]], subject: str) -> bool:
    own = words(subject)
    return bool(own) and any(share(own, s) >= ERROR_SHARE for s in sentences)
