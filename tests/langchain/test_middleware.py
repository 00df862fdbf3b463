"""TierlogSummarizationMiddleware driven by the real LangChain: a scripted chat model,
tools that fail, summarizers that drop what the deleted history owes. No network."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain", reason="the langchain extra is not installed")

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import eventstore
from eventstore import Journal
from eventstore.langchain import TierlogSummarizationMiddleware
from reducers import Compacted, CompactionRefused

RULE = "Never modify files under /etc."
FAILURE = "column tenant_id already exists"
BIG = "-- schema line\n" * 800  # ~3,000 tokens by LangChain's approximate counter


class ScriptedModel(GenericFakeChatModel):
    """A chat model that answers from a script and records every call's messages."""

    calls: list[list[BaseMessage]]

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[BaseMessage], *a: Any, **kw: Any) -> ChatResult:
        self.calls.append(list(messages))
        return super()._generate(messages, *a, **kw)


def _run_migration(name: str) -> str:
    """Run a migration by name."""
    raise ToolException(FAILURE)


def _read_file(path: str) -> str:
    """Read a file."""
    return f"{path}\n{BIG}"


TOOLS = [
    StructuredTool.from_function(_run_migration, name="run_migration", handle_tool_error=True),
    StructuredTool.from_function(_read_file, name="read_file"),
]


def _call(tool: str, call_id: str, **args: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": call_id}])


def _script() -> Iterator[AIMessage]:
    """First request: a failed migration, two big reads, an answer. Second request: one
    more big read (past the trigger: the next call is summarized first), an answer."""
    yield _call("run_migration", "c1", name="add-column-then-backfill")
    yield _call("read_file", "c2", path="migrations/001.sql")
    yield _call("read_file", "c3", path="migrations/002.sql")
    yield AIMessage(content="Read 001 and 002; the column needs a new migration.")
    yield _call("read_file", "c4", path="migrations/003.sql")
    yield AIMessage(content="Index added in 004.")


class Summarizer:
    """A summarizer that records what it was given and writes one fixed line, or, when
    ``honest``, that line and every obligation line it was told."""

    def __init__(self, *, honest: bool = False) -> None:
        self.honest = honest
        self.given: list[list[AnyMessage]] = []

    def __call__(self, messages: list[AnyMessage]) -> str:
        self.given.append(messages)
        told = [m.text for m in messages if isinstance(m, SystemMessage)]
        lines = [x for t in told for x in t.splitlines() if x.startswith("- ")]
        return "\n".join(
            ["Read the three schema files.", *lines]
            if self.honest
            else ["Read the three schema files."]
        )


ARGS: dict[str, Any] = {"trigger": ("tokens", 9_000), "keep": ("messages", 2)}
FIRST = [HumanMessage("Add tenant_id to orders."), HumanMessage(RULE)]
SECOND = [HumanMessage("Now add an index on tenant_id.")]
AFTER = 5  # the model call right after the summarization
MEMORY = InMemorySaver


def _run(middleware: Any) -> ScriptedModel:
    """Both requests on one thread; the model that answered them."""
    model = ScriptedModel(messages=_script(), calls=[])
    agent = create_agent(model, tools=TOOLS, middleware=[middleware], checkpointer=InMemorySaver())
    thread: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": list(FIRST)}, thread)
    agent.invoke({"messages": list(SECOND)}, thread)
    return model


def _text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(m.text for m in messages)


@pytest.fixture(name="journal")
def _journal(tmp_path: Path) -> Iterator[Journal]:
    with eventstore.open(tmp_path / "agent.db") as journal:
        yield journal


def _gated(journal: Journal, summarizer: Summarizer, **kw: Any) -> TierlogSummarizationMiddleware:
    model = ScriptedModel(messages=iter(()), calls=[])
    return TierlogSummarizationMiddleware(
        model, journal=journal, session="s", summarizer=summarizer, **ARGS, **kw
    )


class TestStock:
    def test_the_stock_middleware_loses_the_rule_and_the_failure(self) -> None:
        """The stock middleware hands its summarizer only the last 4,000 tokens: the rule
        and the failed call are deleted unread, and the next model call lacks both."""
        summarizer = Summarizer(honest=True)
        model = ScriptedModel(messages=iter(()), calls=[])
        model = _run(SummarizationMiddleware(model, summarizer=summarizer, **ARGS))
        assert [[m.text for m in given] for given in summarizer.given] == [[SECOND[0].text]]
        after = model.calls[AFTER]
        assert after[0].text.startswith("Here is a summary of the conversation to date")
        assert RULE not in _text(after)
        assert "run_migration" not in _text(after)


def _events(journal: Journal, kind: type) -> list[Any]:
    return [e for e in journal.session("s").events() if isinstance(e, kind)]


def _summary(model: ScriptedModel) -> str:
    first = model.calls[AFTER][0]
    assert first.text.startswith("Here is a summary of the conversation to date")
    return first.text


class TestGate:
    def test_the_summarizer_is_told_what_the_deleted_history_owes(self, journal: Journal) -> None:
        """The summarizer sees only the last request, yet is told the rule and the failed
        call; an honest summary commits at once and the next model call carries both."""
        summarizer = Summarizer(honest=True)
        model = _run(_gated(journal, summarizer))
        (given,) = summarizer.given
        assert isinstance(given[0], SystemMessage)
        assert RULE in given[0].text
        assert FAILURE in given[0].text
        assert [m.text for m in given[1:]] == [SECOND[0].text]
        assert RULE in _summary(model)
        assert "failed: run_migration" in _summary(model)
        assert _events(journal, CompactionRefused) == []
        (node,) = _events(journal, Compacted)
        assert list(node.constraints) == [f"heuristic: {RULE}"]
        assert dict(node.dispositions) == {"run_migration: add-column-then-backfill": "failed"}

    def test_resummarize_asks_once_more_then_retells(self, journal: Journal) -> None:
        """A summary that drops both is refused; the second, told why, drops them again
        and is refused too; the summary message then carries the re-tell block."""
        summarizer = Summarizer()
        model = _run(_gated(journal, summarizer))
        assert len(summarizer.given) == 2
        assert "was refused" in summarizer.given[1][0].text
        refusals = _events(journal, CompactionRefused)
        assert [sorted({v.rule for v in r.violations}) for r in refusals] == [["M1", "M2"]] * 2
        summary = _summary(model)
        assert summary.endswith(
            "Read the three schema files.\n\n[tierlog] Still in force from the summarized"
            f" history:\n- rule: {RULE}\n- failed: run_migration: add-column-then-backfill"
            f" ({FAILURE})"
        )
        (node,) = _events(journal, Compacted)
        assert node.summary in summary

    def test_retell_appends_the_block_at_once(self, journal: Journal) -> None:
        """With on_unsafe="retell" the first refusal is the only one."""
        summarizer = Summarizer()
        model = _run(_gated(journal, summarizer, on_unsafe="retell"))
        assert len(summarizer.given) == 1
        assert len(_events(journal, CompactionRefused)) == 1
        assert RULE in _summary(model)
        assert "failed: run_migration" in _summary(model)

    def test_keep_leaves_the_history_whole(self, journal: Journal) -> None:
        """With on_unsafe="keep" the refusal is recorded and the next model call gets
        the history unsummarized, rule and failure included."""
        model = _run(_gated(journal, Summarizer(), on_unsafe="keep"))
        after = _text(model.calls[AFTER])
        assert "summary of the conversation" not in after
        assert RULE in after
        assert FAILURE in after
        assert len(_events(journal, CompactionRefused)) >= 1
        assert _events(journal, Compacted) == []

    def test_a_chat_model_summarizer_gets_the_hints_in_its_prompt(self, journal: Journal) -> None:
        """A chat-model summarizer's prompt holds the obligations before ``<messages>``."""
        writer = ScriptedModel(
            messages=iter([AIMessage(content=f"{RULE} add-column-then-backfill failed.")]), calls=[]
        )
        model = _run(_gated_model(journal, writer))
        (prompt,) = writer.calls
        text = prompt[0].text
        assert text.index("<tierlog_obligations>") < text.index("<messages>")
        assert RULE in text.split("<messages>")[0]
        assert RULE in _summary(model)
        assert _events(journal, CompactionRefused) == []


def _gated_model(journal: Journal, writer: ScriptedModel) -> TierlogSummarizationMiddleware:
    model = ScriptedModel(messages=iter(()), calls=[])
    return TierlogSummarizationMiddleware(
        model, journal=journal, session="s", summarizer=writer, **ARGS
    )


class TestJournal:
    def test_every_message_is_a_turn_and_obligations_are_raised(self, journal: Journal) -> None:
        """Each message the agent saw is a turn in order; the rule is a pending
        constraint, the failed call a negative fact, every call resolved."""
        _run(_gated(journal, Summarizer(honest=True)))
        turns = journal.session("s").turns()
        assert [t.content for t in turns[: len(FIRST)]] == [m.text for m in FIRST]
        assert [t.role for t in turns] == [
            "user", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
            "assistant", "user", "assistant", "tool", "assistant",
        ]  # fmt: skip
        state = journal.session("s").state
        assert list(state.constraints) == [f"heuristic: {RULE}"]
        assert state.dispositions["run_migration: add-column-then-backfill"].disposition == "failed"
        assert state.open_calls == {}

    def test_a_human_in_the_loop_rejection_is_a_rejected_fact(self, journal: Journal) -> None:
        """A call a human rejects through HumanInTheLoopMiddleware is ``rejected``."""
        model = ScriptedModel(
            messages=iter(
                [_call("run_migration", "c1", name="drop-orders"), AIMessage(content="ok")]
            ),
            calls=[],
        )
        gate = _gated(journal, Summarizer())
        hitl = HumanInTheLoopMiddleware(interrupt_on={"run_migration": True})
        agent = create_agent(
            model, tools=TOOLS, middleware=[hitl, gate], checkpointer=InMemorySaver()
        )
        thread: Any = {"configurable": {"thread_id": "t"}}
        agent.invoke({"messages": [HumanMessage("Migrate.")]}, thread)
        decision = {"decisions": [{"type": "reject", "message": "not that one"}]}
        agent.invoke(Command(resume=decision), thread)
        fact = journal.session("s").state.dispositions["run_migration: drop-orders"]
        assert fact.disposition == "rejected"
        assert "not that one" in fact.reason

    def test_an_unknown_on_unsafe_is_refused_before_anything_is_written(
        self, journal: Journal
    ) -> None:
        """A bad ``on_unsafe`` raises ValueError and starts no session."""
        with pytest.raises(ValueError, match="on_unsafe"):
            _gated(journal, Summarizer(), on_unsafe="spill")
        assert not journal.has_session("s")


class TestAsync:
    def test_ainvoke_takes_the_same_path(self, journal: Journal) -> None:
        """Awaited, the gate refuses twice and re-tells, as it does in sync."""
        model = ScriptedModel(messages=_script(), calls=[])
        agent = create_agent(
            model,
            tools=TOOLS,
            middleware=[_gated(journal, Summarizer())],
            checkpointer=InMemorySaver(),
        )
        thread: Any = {"configurable": {"thread_id": "t"}}

        async def both() -> None:
            await agent.ainvoke({"messages": list(FIRST)}, thread)
            await agent.ainvoke({"messages": list(SECOND)}, thread)

        asyncio.run(both())
        assert len(_events(journal, CompactionRefused)) == 2
        assert RULE in _summary(model)
