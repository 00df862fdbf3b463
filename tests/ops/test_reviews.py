"""The reviewer hook: integrations add reviews to ``audit`` and ``report`` through entry
points, and the core asks each one without naming it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from importlib.metadata import entry_points

import attrs
import pytest

import eventstore
from eventstore._ops import _reviews
from eventstore._ops._reviews import GROUP, Review, ReviewLine, review, reviewers


@attrs.frozen
class _Said:
    """A review that only says who made it."""

    who: str

    def headline(self) -> str:
        return self.who

    def lines(self) -> Sequence[ReviewLine]:
        return ()

    def columns(self) -> dict[str, object]:
        return {"who": self.who}


@attrs.frozen
class _EntryPoint:
    name: str
    reviewer: _reviews.Reviewer

    def load(self) -> _reviews.Reviewer:
        return self.reviewer


def _reviewer(who: str) -> _reviews.Reviewer:
    def reviewer(journal: eventstore.Journal, session_id: str) -> Sequence[Review]:
        return [_Said(f"{who}:{session_id}")] if session_id != "untouched" else []

    return reviewer


@pytest.fixture(name="installed")
def _installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Two reviewers installed under names that sort the other way round."""
    found = [_EntryPoint("zeta", _reviewer("z")), _EntryPoint("alpha", _reviewer("a"))]
    monkeypatch.setattr(_reviews, "entry_points", lambda group: found if group == GROUP else [])
    reviewers.cache_clear()
    yield
    reviewers.cache_clear()


class TestReviewers:
    def test_installed_reviewers_are_found_by_their_group(self) -> None:
        """pyproject.toml registers Claude Code's reviewer; the core loads each reviewer of
        the group without naming one."""
        names = [ep.name for ep in entry_points(group=GROUP)]
        assert "claude-code" in names
        assert len(reviewers()) == len(names)
        assert all(callable(r) for r in reviewers())

    @pytest.mark.usefixtures("installed")
    def test_every_reviewer_is_asked_in_name_order(self, journal: eventstore.Journal) -> None:
        """Reviews come from each reviewer, ordered by entry-point name, all kept."""
        assert [r.headline() for r in review(journal, "s")] == ["a:s", "z:s"]

    @pytest.mark.usefixtures("installed")
    def test_a_session_no_reviewer_knows_has_no_review(self, journal: eventstore.Journal) -> None:
        """A reviewer says nothing about a session it did not ingest."""
        assert review(journal, "untouched") == ()

    def test_a_review_is_anything_with_the_three_methods(self) -> None:
        """Review is a runtime-checkable protocol: an integration needs no base class."""
        assert isinstance(_Said("x"), Review)
