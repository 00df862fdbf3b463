"""The rules that matter: which sentences of a transcript are pending constraints. Pure.

Three sources, each a heuristic whose keys say where a rule came from:

- **what the user typed**: a sentence with an imperative (never, don't, do not,
  always, must, only; German niemals, nie, immer, muss, nicht; French jamais,
  toujours; Spanish nunca, siempre), key ``heuristic: <sentence>``;
- **instructions Claude Code carried** (CLAUDE.md and memory files, as an
  ``instructions`` attachment or a ``Contents of <path> (...)`` block): each line with
  an imperative, key ``<file name>: <line>``;
- **files the user pointed the agent to**: once the user named a file (``read
  docs/spec.md first``), each line with an imperative in what a Read of that file
  returned, key ``<file name>: <line>``.

Not the user's rules: text the user pasted from an earlier session (it holds "This
session is being continued from a previous conversation", or reads as a transcript:
several lines starting ``User:``/``Assistant:``/``⏺``), and sentences the assistant
had written before and the user quoted back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

import attrs

from eventstore._ops import HEURISTIC, rule_key, sentences, states_rule

_PASTED = ("This session is being continued from a previous conversation",)
_SPEAKER = re.compile(r"^\s*(?:User:|Assistant:|Human:|⏺|> )", re.MULTILINE)
_FILE = re.compile(r"(?<![\w/.-])([\w./-]*\w\.(?:md|txt|rst|adoc|ya?ml|toml|json))\b")
_NUMBERED = re.compile(r"^\s*\d+(?:\t|→)")  # the line numbers Read puts before each line
_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|$)", re.DOTALL)
_CONTENTS = re.compile(r"^Contents of (\S+) \([^)]*\):\s*$", re.MULTILINE)


@attrs.frozen(kw_only=True)
class Rule:
    """A pending constraint: its key and its text."""

    key: str
    text: str


@attrs.define
class Rules:
    """What the rule finder remembers while a transcript is read in order."""

    said: list[str] = attrs.field(factory=list)  # what the assistant wrote, normalised
    pointed: set[str] = attrs.field(factory=set)  # file names the user named

    def assistant(self, text: str) -> None:
        """Remember what the assistant wrote, so a user quoting it back is no rule."""
        self.said.append(_norm(text))

    def typed(self, text: str) -> list[Rule]:
        """The rules in text the user typed (none in pasted earlier-session text)."""
        self.pointed.update(named_files(text))
        if any(p in text for p in _PASTED) or len(_SPEAKER.findall(text)) >= 3:
            return []
        return [
            Rule(key=rule_key(HEURISTIC, s), text=s)
            for s in sentences(text)
            if states_rule(s) and not self._quoted(s)
        ]

    def _quoted(self, sentence: str) -> bool:
        """Whether the sentence (or what follows its last colon) is the assistant's."""
        quote = _norm(sentence.rsplit(": ", 1)[-1]).strip("\"'“”„ ")
        return len(quote.split()) >= 3 and any(quote in text for text in self.said)

    def read(self, path: str, text: str) -> list[Rule]:
        """The rules in a file the agent read, if the user had pointed to it."""
        name = PurePosixPath(path).name
        if name not in self.pointed:
            return []
        return list(file_rules(name, text))


def named_files(text: str) -> set[str]:
    """The names of the files ``text`` names (``docs/RULES.md``: ``RULES.md``)."""
    return {m.rsplit("/", 1)[-1] for m in _FILE.findall(text)}


def file_rules(name: str, text: str) -> Iterator[Rule]:
    """Each line of ``text`` (a file called ``name``) that states a rule; what Claude
    Code appended to it (``<system-reminder>`` blocks) is not the file's."""
    for raw in _REMINDER.sub("", text).splitlines():
        line = " ".join(_NUMBERED.sub("", raw).lstrip("-*# ").split())
        if line and states_rule(line):
            yield Rule(key=rule_key(name, line), text=line)


def instructions(text: str) -> Iterator[Rule]:
    """The rules of the ``Contents of <path> (...):`` blocks in a meta message."""
    blocks = _CONTENTS.split(text)
    for path, body in zip(blocks[1::2], blocks[2::2], strict=True):
        yield from file_rules(PurePosixPath(path).name, body.split("</system-reminder>")[0])


def _norm(text: str) -> str:
    return " ".join(text.lower().split())
