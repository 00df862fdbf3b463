"""Reviews an integration adds to ``audit`` and ``report``, without the core importing it.

An integration that ingests someone else's sessions (Claude Code, Codex) knows things
about them the core does not: which compaction stood where in the transcript and what
its summary evidences. It publishes a *reviewer* under the entry-point group
``tierlog.reviewers`` (``pyproject.toml``); ``audit`` asks every reviewer about each
session and shows what comes back through the small :class:`Review` protocol. The
core names no integration: a reviewer that is not installed is simply not asked.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from eventstore._journal import Journal

GROUP = "tierlog.reviewers"


@attrs.frozen(kw_only=True)
class ReviewLine:
    """One obligation a review judged: ``ok`` when the summary evidences it."""

    ok: bool
    verdict: str  # "evidenced", "NOT evidenced", "resolved later", ...
    subject: str  # what it is about: kind, key and detail
    quote: str  # where it was raised, verbatim


@runtime_checkable
class Review(Protocol):
    """What a reviewer says about one compaction of a session."""

    def headline(self) -> str:
        """One line: where the compaction stood and what became of its marker."""

    def lines(self) -> Sequence[ReviewLine]:
        """One line per obligation live at the compaction."""

    def columns(self) -> Mapping[str, object]:
        """The review's figures, by name, for a table row."""


Reviewer = Callable[["Journal", str], Sequence[Review]]
"""``(journal, session_id) -> reviews``; an empty sequence for a session it did not ingest."""


@functools.cache
def reviewers() -> tuple[Reviewer, ...]:
    """Every installed reviewer, in the order of their entry-point names."""
    found = sorted(entry_points(group=GROUP), key=lambda ep: ep.name)
    return tuple(ep.load() for ep in found)


def review(journal: Journal, session_id: str) -> tuple[Review, ...]:
    """What every installed reviewer says about ``session_id``."""
    return tuple(r for reviewer in reviewers() for r in reviewer(journal, session_id))
