"""What a LangChain summary must carry: the obligations owed, and the re-tell block."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain", reason="the langchain extra is not installed")

from eventstore._ops import carried_by
from eventstore.langchain import owed, retell_block
from eventstore.langchain._obligations import hints, not_carried
from reducers import (
    CallOpened,
    ConstraintStated,
    Event,
    ItemDisposed,
    SessionStarted,
    TurnAppended,
    fold,
)

START = SessionStarted(
    window_tokens=1_000,
    trigger_tokens=800,
    truncator_unit="turns",
    floor_span=0,
    floor_unit="turns",
    on_unsafe="halt",
)


def _turn(i: int) -> TurnAppended:
    return TurnAppended(index=i, role="user", content=f"turn {i}", tokens=10)


EVENTS: list[Event] = [
    START,
    _turn(0),
    ConstraintStated(key="heuristic: Never modify /etc.", text="Never modify /etc."),
    _turn(1),
    ItemDisposed(key="run_migration: backfill", disposition="failed", reason="lock timeout"),
    CallOpened(call_id="c9", kind="tool_call", name="read_file: a.sql"),
    _turn(2),
    ConstraintStated(key="heuristic: Always use 004.", text="Always use 004."),
]


class TestOwed:
    def test_only_what_is_raised_before_the_tail_is_owed(self) -> None:
        """A rule raised in the kept tail is held by its turn, so it is not owed."""
        due = owed(fold(EVENTS), tail_start=2)
        assert [c.key for c in due.constraints] == ["heuristic: Never modify /etc."]
        assert [f.key for f in due.facts] == ["run_migration: backfill"]
        assert [c.call_id for c in due.calls] == ["c9"]

    def test_nothing_owed_is_falsy_and_gives_no_hints(self) -> None:
        """Before any obligation, nothing is owed and the summarizer is told nothing."""
        due = owed(fold(EVENTS[:2]), tail_start=1)
        assert not due
        assert hints(due) == ""


class TestRetell:
    def test_the_block_is_evidence_of_everything_it_states(self) -> None:
        """A summary that is only the re-tell block carries every owed obligation."""
        state = fold(EVENTS)
        due = owed(state, tail_start=2)
        block = retell_block(due)
        assert block.splitlines() == [
            "[tierlog] Still in force from the summarized history:",
            "- rule: Never modify /etc.",
            "- failed: run_migration: backfill (lock timeout)",
            "- open call c9: read_file: a.sql (no result yet)",
        ]
        assert not not_carried(due, carried_by(state, block))

    def test_a_summary_that_says_nothing_carries_nothing(self) -> None:
        """Against a summary that names none of them, every obligation is left out."""
        state = fold(EVENTS)
        due = owed(state, tail_start=2)
        assert not_carried(due, carried_by(state, "Read the schema.")) == due
