"""The gate given messages the journal cannot take as they are: it journals what it
can, says what it skipped or repaired in a ``Noted`` event, and never breaks the agent."""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain", reason="the langchain extra is not installed")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import eventstore
from eventstore import Journal
from eventstore.langchain import TierlogSummarizationMiddleware
from reducers import CallOpened, CallResolved, ConstraintStated, ItemDisposed, Noted, TurnAppended
from tests.langchain.test_middleware import ScriptedModel, Summarizer


@pytest.fixture(name="journal")
def _journal(tmp_path: Path) -> Iterator[Journal]:
    with eventstore.open(tmp_path / "agent.db") as journal:
        yield journal


def _gate(journal: Journal) -> TierlogSummarizationMiddleware:
    model = ScriptedModel(messages=iter(()), calls=[])
    return TierlogSummarizationMiddleware(
        model,
        journal=journal,
        session="s",
        summarizer=Summarizer(),
        trigger=("messages", 50),
        keep=("messages", 2),
    )


def _see(gate: TierlogSummarizationMiddleware, messages: Sequence[BaseMessage]) -> None:
    """What the agent does before each model call: hand the gate its messages."""
    assert gate.before_model({"messages": list(messages)}, None) is None  # type: ignore[arg-type]


def _result(call_id: str, text: str, **kw: Any) -> ToolMessage:
    return ToolMessage(text, tool_call_id=call_id, **kw)


def _call(call_id: str, tool: str = "run", **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": call_id}])


def _of(journal: Journal, kind: type) -> list[Any]:
    return [e for e in journal.session("s").events() if isinstance(e, kind)]


def _notes(journal: Journal) -> list[str]:
    return [n.kind for n in _of(journal, Noted)]


class TestReusedCallIds:
    def test_a_reused_id_is_noted_and_its_failure_still_recorded(self, journal: Journal) -> None:
        """A provider that numbers its calls per turn reuses ``call_0``: the second call
        is not opened again (a note says so), and its failure is a fact on its name."""
        gate = _gate(journal)
        first = [
            HumanMessage("go"),
            _call("call_0", path="a"),
            ToolMessage("ok", tool_call_id="call_0"),
        ]
        _see(gate, first)
        again = [
            _call("call_0", path="b"),
            ToolMessage("no", tool_call_id="call_0", status="error"),
        ]
        _see(gate, [*first, *again])
        assert _notes(journal) == ["call_id_reused"]
        assert [e.call_id for e in _of(journal, CallOpened)] == ["call_0"]
        assert [e.outcome for e in _of(journal, CallResolved)] == ["ok"]
        (fact,) = _of(journal, ItemDisposed)
        assert (fact.key, fact.disposition) == ("run: b", "failed")
        assert len(_of(journal, TurnAppended)) == 5

    def test_two_calls_with_one_id_in_one_message_are_journaled(self, journal: Journal) -> None:
        """Two tool calls of one message sharing an id: the first opens, the second is noted."""
        twice = AIMessage(
            content="",
            tool_calls=[
                {"name": "a", "args": {}, "id": "d"},
                {"name": "b", "args": {}, "id": "d"},
            ],
        )
        _see(_gate(journal), [HumanMessage("go"), twice])
        assert [e.name for e in _of(journal, CallOpened)] == ["a"]
        assert _notes(journal) == ["call_id_reused"]

    def test_a_restarted_gate_journals_a_thread_with_calls_again(self, journal: Journal) -> None:
        """A new gate on the session (a restarted process reading its checkpointed
        thread) journals the messages again without opening their calls twice."""
        thread = [
            HumanMessage("Never touch /etc.", id="h1"),
            AIMessage("", id="a1", tool_calls=[{"name": "run", "args": {}, "id": "c1"}]),
            ToolMessage("boom", tool_call_id="c1", status="error", id="t1"),
        ]
        _see(_gate(journal), thread)
        _see(_gate(journal), [*thread, HumanMessage("And now?", id="h2")])
        assert len(_of(journal, TurnAppended)) == 7
        assert len(_of(journal, CallOpened)) == 1
        assert _notes(journal) == ["call_id_reused"]
        assert journal.session("s").state.dispositions["run"].disposition == "failed"

    def test_a_result_for_a_call_never_seen_is_noted(self, journal: Journal) -> None:
        """A tool message answering a call the gate never saw resolves nothing, noted."""
        _see(_gate(journal), [HumanMessage("go"), ToolMessage("x", tool_call_id="zz")])
        assert _of(journal, CallResolved) == []
        assert _notes(journal) == ["result_without_call"]

    def test_a_tool_call_without_an_id_is_noted(self, journal: Journal) -> None:
        """A tool call with no id cannot be opened: it is a turn and a note."""
        _see(_gate(journal), [HumanMessage("go"), _call("")])
        assert _of(journal, CallOpened) == []
        assert _notes(journal) == ["call_without_id"]


class TestUnstorableText:
    def test_lone_surrogates_are_replaced_and_noted(self, journal: Journal) -> None:
        """A file name read with surrogateescape puts lone surrogates in a tool's output
        and arguments: they become U+FFFD, the obligations stay, and a note says so."""
        name = "report-\udcff.csv"
        _see(
            _gate(journal),
            [
                HumanMessage("Never delete \udcff files."),
                _call("c\udcff", "rm", path=name),
                ToolMessage(f"rm: {name}: denied", tool_call_id="c\udcff", status="error"),
            ],
        )
        state = journal.session("s").state
        assert list(state.constraints) == ["heuristic: Never delete \ufffd files."]
        assert state.dispositions["rm: report-\ufffd.csv"].disposition == "failed"
        assert _notes(journal) == ["lone_surrogate"] * 3
        assert all(n.text.startswith("message ") for n in _of(journal, Noted))

    def test_arguments_json_cannot_encode_are_rendered(self, journal: Journal) -> None:
        """A tool call built in code with a datetime argument is journaled, not a TypeError."""
        when = datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC)
        _see(_gate(journal), [HumanMessage("go"), _call("c1", "schedule", at=when)])
        (turn,) = [t for t in journal.session("s").turns() if t.role == "assistant"]
        assert "2026-01-02" in turn.content


class TestOddKeys:
    def test_an_empty_tierlog_rule_falls_back_to_the_heuristic(self, journal: Journal) -> None:
        """``tierlog_rule=""`` names no key: the sentence heuristic reads the message, noted."""
        message = HumanMessage("Never push on Friday.", additional_kwargs={"tierlog_rule": ""})
        _see(_gate(journal), [message])
        assert [c.key for c in _of(journal, ConstraintStated)] == [
            "heuristic: Never push on Friday."
        ]
        assert _notes(journal) == ["rule_key_unusable"]

    def test_a_rule_in_german_is_read_as_claude_code_ingest_reads_it(
        self, journal: Journal
    ) -> None:
        """One heuristic for every integration: "niemals" states a rule here too."""
        _see(_gate(journal), [HumanMessage("Bitte niemals /etc ändern. Danke.")])
        assert [c.key for c in _of(journal, ConstraintStated)] == [
            "heuristic: Bitte niemals /etc ändern."
        ]

    def test_a_plain_german_sentence_with_nicht_states_no_rule(self, journal: Journal) -> None:
        """ "nicht" is also plain "not": a user saying what does not work states no rule
        (before: a pending rule, so every summary that did not quote it was refused and
        the summarizer asked again)."""
        _see(_gate(journal), [HumanMessage("Der Build läuft immer noch nicht durch.")])
        assert _of(journal, ConstraintStated) == []

    def test_a_failed_result_with_no_name_or_id_still_counts(self, journal: Journal) -> None:
        """An error result naming no call, tool or id is a failed fact on ``tool``, noted."""
        _see(
            _gate(journal),
            [HumanMessage("go"), ToolMessage("boom", tool_call_id="", status="error")],
        )
        (fact,) = _of(journal, ItemDisposed)
        assert (fact.key, fact.disposition) == ("tool", "failed")
        assert _notes(journal) == ["result_without_call"]
