"""How the evidence matcher reads a summary: its words, sentences and outline. Pure.

See ``_evidence`` for what the matcher makes of them.
"""

from __future__ import annotations

import functools
import re

import attrs

STEM = 5
_WORD = re.compile(r"[a-z0-9_./-]+|[^\W\d_]+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+|(?<=:)\s+(?=[-*\d])")
_CLAUSE = re.compile(r"(?<=[.!?;])\s+|(?<=:)\s+(?=[-*\d])")
_ENDINGS = ("ing", "ed", "es", "s")
_ITEM = re.compile(r"^(?:[-*\u2022]\s|\d+[.)]\s)")
_NAME = re.compile(r"[./_]")  # a path or identifier: compared whole, by its last part
_CODE = re.compile(r"`([^`]+)`")
TAG = re.compile(r"\[([A-Za-z][\w -]{2,})\]")  # the check that failed: [CREDO], [MYPY]
_PUNCT = ".,;:!?()\"'`"


def _vocab(text: str) -> frozenset[str]:
    return frozenset(text.split())


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """``word`` without one ending (``-ing``, ``-ed``, ``-es``, ``-s``) and cut to ``STEM``."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)][:STEM]
    return word[:STEM]


STOP = _vocab(
    "a an and are as at be been by do does for from had has have i if in into is it its"
    " of on or so that the their them then there these this to was were which will with"
    " you your we our me my he she they what when where who why how all any can could"
    " should would may might also just first before after up out over more most set use"
    " used using please bitte die der das den und ich mir zeig le la les un une et de du"
    " des"
)
# Words an error says in many errors: they never name which attempt it was.
GENERIC = _vocab(
    "file files line lines code exit command bash path paths source sources check checking"
    " following one two run running output stderr stdout status result value type true"
    " false null none done total skipped see more help use option options argument"
)
# A word ending in * is a stem (``fail*``: failed, failure); any other must be the word.
PROHIBITION = _vocab(  # instead, rather, only: a rule said as its alternative
    "never not dont avoid* without forbid* forbad* prohib* must no nie niemals nicht kein"
    " keine jamais pas nunca instead rather only nothing none"
)
OBLIGED = PROHIBITION | _vocab("alway* need* requir* rule* immer toujours siempre mandat*")
FAILURE = _vocab(
    "fail* error* exit couldnt cannot cant unable broke crash* missing found exist*"
    " denied refus* reject* declin* interr* stopp* block* permi* abort* timeout"
    " fatal fixed warning* problem* conflict* wasnt didnt unresolv* bug"
    " fehl* échou* erreur* échec fallo falló fallido fallida"
)
# A negation governs the next two words: ``did not fail``, ``without any errors``.
NEGATORS = _vocab(
    "not no without never zero didnt wasnt isnt doesnt dont nor ohne kein keine keinen"
    " nicht sans pas aucun aucune sin ningún ningun senza"
)
NEGATABLE = _vocab("fail* error* problem* crash* conflict* bug* warning* fatal fehl* erreur*")
SUCCESS = _vocab("work* succe* pass* success*")  # negated: a failure (``didn't work``)
TRIED = _vocab("run* ran tri* try attempt* execut* call* invok* use* touch*")
REFUSAL = _vocab(
    "refus* reject* declin* denied interr* stopp* block* permi* abort* didnt wrong correct*"
)
GENERIC_STEMS = frozenset(stem(w) for w in GENERIC)
# A sentence with one of these stands for every like attempt, not just one of them.
REPEATED = _vocab(
    "twice both each every again multipl* sever* repeat* persist* time* none three four"
    " five mehrmals wieder"
)
INTERRUPTED = _vocab("interr*")


def sentences_of(summary: str) -> list[frozenset[str]]:
    """The summary's sentences (and list items), each as its words."""
    return [words(s) for s in _SENTENCE.split(summary) if s.strip()]


def units_of(summary: str) -> list[frozenset[str]]:
    """The summary's sentences, each as its words with the words of the headings it sits
    under: a line ending in ``:`` governs the lines indented deeper, and, when it is not
    itself a list item, the list items that follow it at its indentation
    ("Errors encountered:" / "1. Credo nesting depth warning - extracted a helper")."""
    out: list[frozenset[str]] = []
    stack: list[_Outline] = []
    for raw in summary.splitlines():
        if not raw.strip():
            continue
        here = _Outline.of(raw)
        while stack and (
            stack[-1].indent > here.indent
            or (stack[-1].indent == here.indent and not (stack[-1].governs and here.item))
        ):
            stack.pop()
        above = frozenset().union(*(o.words for o in stack if o.heading))
        out += [words(s) | above for s in _CLAUSE.split(raw.strip()) if s.strip()]
        stack.append(here)
    return out


@attrs.frozen
class _Outline:
    """A line of a summary as an outline reads it."""

    indent: int
    heading: bool  # ends in ":"
    item: bool  # a list item ("- ", "1. ")
    words: frozenset[str]

    @classmethod
    def of(cls, raw: str) -> _Outline:
        line = raw.strip()
        heading = line.strip("*#_ ").endswith(":")
        item = bool(_ITEM.match(line))
        return cls(len(raw) - len(raw.lstrip()), heading, item, words(line))

    @property
    def governs(self) -> bool:
        """Whether the list items after it at its indentation sit under it."""
        return self.heading and not self.item


def words(text: str) -> frozenset[str]:
    """The words of ``text`` as the matcher compares them: lower-cased, common words left
    out, each stemmed (:func:`stem`); a path, file name or identifier (``docs/notes.txt``,
    ``span_id``) whole, by its last part. Read in order: a word of failure a negation
    governs (``did not fail``, ``without errors``) is kept apart (``~fail``), as is
    ``didn't``/``wasn't`` before a verb of trying (``we didn't run it``: not a failure);
    a negated verb of success (``didn't work``) says ``fail``."""
    out: set[str] = set()
    kept = [
        w
        for raw in _WORD.findall(text.lower().replace("'", "").replace("\u2019", ""))
        if (w := raw.strip("./-")) and (w not in STOP or w in NEGATORS)
    ]
    for i, w in enumerate(kept):
        if w in STOP:
            continue
        out.update(_read(w, kept[max(0, i - 2) : i], kept[i + 1 : i + 3]))
    return frozenset(out)


def _read(w: str, before: list[str], after: list[str]) -> set[str]:
    """What word ``w`` counts as, with the two words before and after it."""
    last = w.rsplit("/", 1)[-1]
    word = last if _NAME.search(last) else stem(last)
    negated = any(b in NEGATORS for b in before)
    if negated and cued(word, NEGATABLE):
        return {"~" + word}
    if negated and cued(word, SUCCESS):
        return {word, "fail"}
    if w in ("didnt", "wasnt") and any(cued(stem(a), TRIED) for a in after):
        return {"~" + word}
    out = {word}
    if "/" in w and "." not in w:  # and/or, credo/compiler: each word counts
        out.update(stem(p) for p in w.split("/") if p and p not in STOP)
    return out


def names(text: str) -> frozenset[str]:
    """The words of the paths, file names and code spans ``text`` names (``/etc``,
    ``README.md``, `` `make check` ``), as :func:`words` reads them."""
    spans = " ".join(_CODE.findall(text))
    paths = " ".join(w for w in text.split() if _NAME.search(w.strip(_PUNCT)))
    return words(spans) | words(paths)


def share(own: frozenset[str], sentence: frozenset[str]) -> float:
    """The share of ``own`` the sentence holds."""
    return len(own & sentence) / len(own) if own else 0.0


def cued(word: str, cues: frozenset[str]) -> bool:
    """Whether a (stemmed) word is one of ``cues`` (a stem, ``fail*``, or a whole word)."""
    stems, whole = _compiled(cues)
    return word in whole or word.startswith(stems)


@functools.cache
def _compiled(cues: frozenset[str]) -> tuple[tuple[str, ...], frozenset[str]]:
    """``cues`` as the prefixes of its stems and its whole words, stemmed."""
    stems = tuple(c[:-1][:STEM] for c in cues if c.endswith("*"))
    return stems, frozenset(stem(c) for c in cues if not c.endswith("*"))


def says(sentence: frozenset[str], cues: frozenset[str]) -> bool:
    """Whether the sentence holds one of ``cues``."""
    return any(cued(w, cues) for w in sentence)
