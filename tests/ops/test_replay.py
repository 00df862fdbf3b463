"""Replay: a recorded log read back as the commands that wrote it, each decided again."""

from __future__ import annotations

import attrs
import pytest

import eventstore
import reducers as r
from eventstore import Session
from eventstore._ops import _replay
from eventstore._ops._replay import command_of, commands, divergences
from tests.helpers import fill, new_session
from tests.timelines import story_session


def _names(group: list[r.Event]) -> list[str]:
    return [type(e).__name__ for e in group]


@pytest.fixture(name="story")
def _story(journal: eventstore.Journal) -> Session:
    return story_session(journal)


class TestCommands:
    def test_a_decision_and_what_it_caused_are_one_command(self, story: Session) -> None:
        """A spill and the refusal it preceded, a compaction or a clear and the marker
        invalidations it wrote: each one group; every other event a group of its own."""
        groups = [_names(g) for g in commands(story.events())]
        assert ["Spilled", "CompactionRefused"] in groups
        assert ["Compacted", "MarkerInvalidated"] in groups
        assert ["ContextCleared", "MarkerInvalidated"] in groups
        assert sum(map(len, groups)) == story.version
        assert all(
            len(g) == 1 for g in groups if g[0] not in ("Spilled", "Compacted", "ContextCleared")
        )

    def test_an_invalidation_alone_has_no_command(self) -> None:
        """A MarkerInvalidated with nothing that caused it cannot be re-decided."""
        alone = r.MarkerInvalidated(marker_id="m1", rule="M3", reason="?")
        with pytest.raises(eventstore.InvalidEvent, match="without the event that caused it"):
            command_of([alone])

    def test_a_second_start_has_no_command(self, story: Session) -> None:
        """SessionStarted inside a session is not something a command writes."""
        started = next(iter(story.events()))
        with pytest.raises(eventstore.InvalidEvent, match="in the middle of a session"):
            command_of([started])


class TestDivergences:
    def test_an_honest_log_has_none(self, story: Session) -> None:
        """Every recorded decision is the one the current code makes."""
        assert list(divergences(story.id, story.events(), story.effects)) == []

    def test_a_compaction_the_invariants_refuse_is_named_at_its_version(
        self, story: Session
    ) -> None:
        """A Compacted that drops a truncated obligation (written by a forger or an old
        bug) diverges where it stands: the current code refuses it, and spills first."""
        events = list(story.events())
        at = next(i for i, e in enumerate(events) if isinstance(e, r.Compacted))
        compacted = events[at]
        assert isinstance(compacted, r.Compacted)
        events[at] = attrs.evolve(compacted, constraints=())
        (found,) = divergences(story.id, events, story.effects)
        assert found.version == at + 1
        assert "a spill of [0, 100) is due here but none was recorded" in found.problem

    def test_a_long_plain_run_names_its_first_bad_event(
        self, journal: eventstore.Journal, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Plain events folded a run at a time still name the exact bad version."""
        s = new_session(journal)
        fill(s, 9)
        events = list(s.events())
        turn = events[7]
        assert isinstance(turn, r.TurnAppended)
        events[7] = attrs.evolve(turn, index=99)  # turn 6 recorded as turn 99
        monkeypatch.setattr(_replay, "_RUN", 4)
        (found,) = divergences(s.id, events, s.effects)
        assert (found.version, found.check) == (8, "replay")
