"""The conservative mention rule: what a compaction summary evidences."""

from __future__ import annotations

import attrs
import pytest

import reducers
from eventstore.claude_code._mention import carried_by, fact_evidenced, short_name
from reducers import (
    CallOpened,
    ConstraintStated,
    ItemDisposed,
    SessionStarted,
    TurnAppended,
)
from tests.helpers import TURNS


def _state(*events: reducers.Event) -> reducers.SessionState:
    started = SessionStarted(**attrs.asdict(TURNS))
    turn = TurnAppended(index=0, role="user", content="x", tokens=1)
    return reducers.fold([started, turn, *events])


class TestNegativeFacts:
    @pytest.mark.parametrize(
        ("summary", "evidenced"),
        [
            ("- `git push` failed: no upstream branch", True),
            ("- GIT PUSH: exit code 128", True),
            ("- Committed and pushed.", False),
            ("- ran git push\n- an error happened elsewhere", False),
            ("- pushing failed", False),
        ],
    )
    def test_key_and_word_on_one_line(self, summary: str, evidenced: bool) -> None:
        """A failed call is evidenced only by a line naming it and saying it failed."""
        lines = [" ".join(x.lower().split()) for x in summary.splitlines()]
        assert fact_evidenced("Bash: git push", "failed", lines) is evidenced

    def test_the_disposition_must_be_the_right_one(self) -> None:
        """'rejected' words do not evidence a failure, nor the other way round."""
        assert not fact_evidenced("Bash: git push", "failed", ["the user rejected git push"])
        assert fact_evidenced("Bash: git push", "rejected", ["the user rejected git push"])

    def test_an_interrupted_reply_needs_only_the_word(self) -> None:
        """An interruption of no call is evidenced by any line saying the user interrupted."""
        assert short_name("interrupted: reply") == ""
        assert fact_evidenced("interrupted: reply", "rejected", ["6. user interrupted the wait"])
        assert not fact_evidenced("interrupted: reply", "rejected", ["6. user said go on"])


class TestCarriedBy:
    def test_each_kind_of_obligation(self) -> None:
        """Calls by short key or id, rules by their sentence, facts by key and word."""
        state = _state(
            CallOpened(call_id="toolu_1", kind="tool_call", name="Bash: mix test"),
            CallOpened(call_id="toolu_2", kind="tool_call", name="Read: lib/a.ex"),
            CallOpened(call_id="toolu_3", kind="tool_call", name="Skill: pdf"),
            ConstraintStated(key="heuristic: Never touch /etc.", text="Never touch /etc."),
            ConstraintStated(key="heuristic: Always run tests.", text="Always run tests."),
            ItemDisposed(key="Bash: git push", disposition="failed", reason="exit 128"),
            ItemDisposed(key="Glob: mix.exs", disposition="rejected", reason="no"),
        )
        summary = (
            "Still running: `mix test` (toolu_3 too).\n"
            'The user said: "never   touch /etc."\n'
            "- git push failed (no upstream)\n"
            "- looked for mix.exs\n"
        )
        carried = carried_by(state, summary)
        assert carried.calls == ("toolu_1", "toolu_3")
        assert carried.constraints == ("heuristic: Never touch /etc.",)
        assert dict(carried.dispositions) == {"Bash: git push": "failed"}

    def test_an_empty_summary_carries_nothing(self) -> None:
        """No text, no evidence."""
        state = _state(
            CallOpened(call_id="toolu_1", kind="tool_call", name="Bash"),
            ItemDisposed(key="Bash", disposition="failed", reason="x"),
        )
        carried = carried_by(state, "")
        assert (carried.calls, carried.constraints, dict(carried.dispositions)) == ((), (), {})


class TestWordBoundaries:
    @pytest.mark.parametrize(
        ("summary", "evidenced"),
        [
            ("- Performance errors remain in the parser.", False),  # perfo-rm-ance
            ("- the rm of build failed: permission denied", True),
            ("- `rm -rf build` errored", True),
            ("- confirm: an error", False),  # conf-i-rm
            ("- rm_all failed", False),  # _ is a word character
        ],
    )
    def test_a_short_key_is_a_word_not_a_substring(self, summary: str, evidenced: bool) -> None:
        """A key's edges must not touch a letter, digit or underscore of the summary."""
        lines = [" ".join(x.lower().split()) for x in summary.splitlines()]
        assert fact_evidenced("Bash: rm", "failed", lines) is evidenced

    def test_a_disposition_word_starts_a_word(self) -> None:
        """'fail' is in 'failed' but not in 'unfailing'; 'error' not in 'terror'."""
        assert fact_evidenced("Bash: make", "failed", ["make: build failed"])
        assert not fact_evidenced("Bash: make", "failed", ["make ran unfailingly, no terror"])

    def test_an_open_call_needs_its_key_as_a_word(self) -> None:
        """An open `ls` call is not evidenced by 'tools', nor toolu_1 by toolu_12."""
        state = _state(
            CallOpened(call_id="toolu_1", kind="tool_call", name="Bash: ls"),
            CallOpened(call_id="toolu_2", kind="tool_call", name="Read: lib/a.ex"),
        )
        assert carried_by(state, "Installed the new tools; see toolu_12.").calls == ()
        assert carried_by(state, "ran ls, read lib/a.ex.").calls == ("toolu_1", "toolu_2")

    def test_a_rule_is_found_as_whole_words(self) -> None:
        """A rule quoted inside a longer word run is not the rule."""
        state = _state(ConstraintStated(key="heuristic: only main", text="only main"))
        assert carried_by(state, "the only mainstream option").constraints == ()
        assert carried_by(state, "Rule: only main.").constraints == ("heuristic: only main",)
