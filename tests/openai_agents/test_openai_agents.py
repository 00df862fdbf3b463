"""TierlogSession driven by the real OpenAI Agents SDK: scripted models, no network."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import attrs
import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import Agent, Runner, RunResult, SQLiteSession, function_tool, set_tracing_disabled
from agents.memory import Session as SdkSession
from agents.memory import is_openai_responses_compaction_aware_session
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage

import eventstore
from eventstore import SessionConfig, UnrecoverableCompactionError
from eventstore.cli import main
from eventstore.openai_agents import (
    Summarizer,
    SummarizerError,
    Summary,
    SummaryRequest,
    TierlogSession,
)
from tests.helpers import rows
from tests.test_docs import run_page

Item = dict[str, Any]
PAGE = Path(__file__).resolve().parents[2] / "docs" / "openai-agents.md"

set_tracing_disabled(True)  # no trace export: these tests never touch the network

# A trigger of one token: every run_compaction the runner makes is a real attempt.
EAGER = SessionConfig(
    window_tokens=100_000,
    trigger_tokens=1,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="spill",
)


@function_tool
def grep(pattern: str) -> str:
    """Search the repository."""
    return f"migrations/003_orders.sql: {pattern} INTEGER NOT NULL"


@function_tool(needs_approval=True)
def deploy(env: str) -> str:
    """Deploy the migration (a person approves it first)."""
    return f"deployed to {env}"


def _usage(inp: int, out: int) -> Usage:
    return Usage(requests=1, input_tokens=inp, output_tokens=out, total_tokens=inp + out)


def _tool_runs() -> list[Any]:
    """Model steps for two runs with tool calls and one plain answer."""
    return [
        ModelStep(
            output=[function_call("grep", {"pattern": "tenant_id"}, call_id="call-1")],
            usage=_usage(50, 12),
        ),
        ModelStep(
            output=[assistant_message("tenant_id is in 003_orders.sql")], usage=_usage(90, 9)
        ),
        [function_call("grep", {"pattern": "orders.total — ünïcode"}, call_id="call-2")],
        [assistant_message("Found orders.total; nothing else to change.")],
        [assistant_message("Done: the migration adds tenant_id.")],
    ]


def _approval_runs() -> list[Any]:
    """A tool call, a deploy left waiting for approval, then the conversation moves on."""
    return [
        [function_call("grep", {"pattern": "tenant_id"}, call_id="call-1")],
        [assistant_message("tenant_id is in 003_orders.sql")],
        [function_call("deploy", {"env": "prod"}, call_id="call-9")],
        [assistant_message("The deploy waits for your approval.")],
        [assistant_message("Still waiting; anything else?")],
    ]


async def _run(session: Any, model: ScriptedModel, prompt: str) -> RunResult:
    agent = Agent(name="dev", model=model, tools=[grep, deploy])
    return await Runner.run(agent, prompt, session=session)


def _kinds(items: Sequence[Any]) -> list[str]:
    return [str(i.get("type") or i.get("role")) for i in items]


def _no_orphan_outputs(items: Sequence[Any]) -> bool:
    """Every tool output in ``items`` comes after the call it answers."""
    calls: set[str] = set()
    for item in items:
        if item.get("type") == "function_call":
            calls.add(item["call_id"])
        if item.get("type") == "function_call_output" and item["call_id"] not in calls:
            return False
    return True


def _types(session: TierlogSession) -> list[str]:
    return session.run(lambda s: [type(e).__name__ for e in s.events()])


class TestProtocol:
    def test_is_an_sdk_session_with_compaction(self, tmp_path: Path) -> None:
        """The SDK recognises it as a Session and as compaction-aware."""
        with TierlogSession("s", tmp_path / "t.db") as session:
            typed: SdkSession = session
            assert isinstance(typed, SdkSession)
            assert is_openai_responses_compaction_aware_session(session)
            assert session.session_settings is not None

    def test_new_session_gets_the_config_an_old_one_keeps_its_own(self, tmp_path: Path) -> None:
        """``config`` starts a new journal session; reopening ignores another config."""
        with TierlogSession("s", tmp_path / "t.db", config=EAGER) as session:
            assert session.state.config == EAGER
        other = SessionConfig(
            window_tokens=9, trigger_tokens=9, truncator_unit="turns",
            floor_span=0, floor_unit="turns", on_unsafe="halt",
        )  # fmt: skip
        with TierlogSession("s", tmp_path / "t.db", config=other) as session:
            assert session.state.config == EAGER

    def test_bad_items_write_nothing(self, tmp_path: Path) -> None:
        """A non-object or non-JSON item is InvalidEvent and the batch is not written."""
        with TierlogSession("s", tmp_path / "t.db") as session:
            version = session.state.version
            for bad in ([{"role": "user", "content": "ok"}, "text"], [{"x": object()}]):
                with pytest.raises(eventstore.InvalidEvent):
                    asyncio.run(session.add_items(bad))  # type: ignore[arg-type]
            assert session.state.version == version

    def test_journal_from_another_thread_is_a_clear_error(self, tmp_path: Path) -> None:
        """Given an open Journal, calls from another thread raise JournalError."""
        journal = eventstore.open(tmp_path / "t.db")
        session = TierlogSession("s", journal)
        errors: list[BaseException] = []

        def elsewhere() -> None:
            try:
                session.state_constraint("k", "rule")
            except eventstore.JournalError as exc:
                errors.append(exc)

        worker = threading.Thread(target=elsewhere)
        worker.start()
        worker.join()
        assert len(errors) == 1
        assert "thread" in str(errors[0])
        session.state_constraint("k", "rule")  # the opening thread may
        assert list(session.state.constraints) == ["k"]
        session.close()
        journal.close()

    def test_two_sessions_on_one_file_share_the_history(self, tmp_path: Path) -> None:
        """Two TierlogSessions (two connections) on one journal session see every item."""
        first = TierlogSession("s", tmp_path / "t.db")
        second = TierlogSession("s", tmp_path / "t.db")

        async def interleave() -> None:
            for n in range(6):
                writer = first if n % 2 else second
                await writer.add_items([{"role": "user", "content": f"m{n}"}])
            await first.pop_item()

        asyncio.run(interleave())
        expected = [{"role": "user", "content": f"m{n}"} for n in range(5)]
        assert asyncio.run(first.get_items()) == expected == asyncio.run(second.get_items())
        first.close()
        second.close()

    def test_runtime_methods_work_from_sync_tools(self, tmp_path: Path) -> None:
        """A sync tool (run on an SDK worker thread) states a constraint through the session."""
        session = TierlogSession("s", tmp_path / "t.db")

        @function_tool
        def remember(rule: str) -> str:
            """Remember a rule the user gave."""
            session.state_constraint("user-rule", rule)
            session.dispose("add-then-backfill", "rejected", "the user said no")
            return "noted"

        model = ScriptedModel(
            [
                [function_call("remember", {"rule": "never touch /etc"}, call_id="c")],
                [assistant_message("Noted.")],
            ]
        )
        agent = Agent(name="dev", model=model, tools=[remember])
        asyncio.run(Runner.run(agent, "Never modify /etc.", session=session))
        state = session.state
        assert state.constraints["user-rule"].text == "never touch /etc"
        assert state.dispositions["add-then-backfill"].disposition == "rejected"
        session.close()

    def test_close_on_the_journal_thread_closes_there(self, tmp_path: Path) -> None:
        """close() from a run(fn) callback closes the journal instead of hanging."""
        session = TierlogSession("s", tmp_path / "t.db")
        asyncio.run(session.add_items([{"role": "user", "content": "hi"}]))
        done: list[str] = []
        caller = threading.Thread(
            target=lambda: done.append(str(session.run(lambda _: session.close()))), daemon=True
        )
        caller.start()
        caller.join(10)
        assert not caller.is_alive(), "close() on the journal thread hung"
        assert done == ["None"]
        with pytest.raises(eventstore.JournalError, match="closed"):
            session.run(lambda s: s.state)
        session.close()  # still idempotent
        with TierlogSession("s", tmp_path / "t.db") as again:  # the file was let go
            assert asyncio.run(again.get_items()) == [{"role": "user", "content": "hi"}]


class TestSameAsSQLiteSession:
    def test_two_runs_and_a_restart_leave_equal_items(self, tmp_path: Path) -> None:
        """Same scripted runs: equal get_items, equal model inputs, before and after reopening."""
        t_model, q_model = ScriptedModel(_tool_runs()), ScriptedModel(_tool_runs())

        async def scenario() -> None:
            tier = TierlogSession("mig-42", tmp_path / "t.db")
            sql = SQLiteSession("mig-42", tmp_path / "q.db")
            for prompt in ("Where is tenant_id?", "And orders.total?"):
                await _run(tier, t_model, prompt)
                await _run(sql, q_model, prompt)
                items = await tier.get_items()
                assert items == await sql.get_items()
                assert json.dumps(items) == json.dumps(await sql.get_items())
            tier.close()
            sql.close()
            tier = TierlogSession("mig-42", tmp_path / "t.db")  # a new process, in effect
            sql = SQLiteSession("mig-42", tmp_path / "q.db")
            assert await tier.get_items() == await sql.get_items()
            await _run(tier, t_model, "Summarize.")
            await _run(sql, q_model, "Summarize.")
            items = await tier.get_items()
            assert items == await sql.get_items()
            assert _kinds(items).count("function_call") == 2
            tier.close()
            sql.close()

        asyncio.run(scenario())
        assert [c.input for c in t_model.calls] == [c.input for c in q_model.calls]
        t_model.assert_complete()

    def test_limits_match(self, tmp_path: Path) -> None:
        """get_items(limit) and session_settings.limit cut the history as SQLiteSession does."""
        models = ScriptedModel(_tool_runs()), ScriptedModel(_tool_runs())

        async def scenario() -> None:
            tier = TierlogSession("s", tmp_path / "t.db", session_settings={"limit": 3})
            sql = SQLiteSession("s", tmp_path / "q.db", session_settings={"limit": 3})
            for session, model in zip((tier, sql), models, strict=True):
                await _run(session, model, "Where is tenant_id?")
                await _run(session, model, "And orders.total?")
            for limit in (None, 0, 1, 3, 5, 100, -1):
                assert await tier.get_items(limit) == await sql.get_items(limit), limit
            tier.close()
            sql.close()

        asyncio.run(scenario())
        assert [c.input for c in models[0].calls] == [c.input for c in models[1].calls]

    def test_pop_and_clear_match(self, tmp_path: Path) -> None:
        """pop_item returns the same items, clear_session empties both, and runs go on alike."""
        models = ScriptedModel(_tool_runs()), ScriptedModel(_tool_runs())

        async def scenario() -> None:
            tier = TierlogSession("s", tmp_path / "t.db")
            sql = SQLiteSession("s", tmp_path / "q.db")
            for session, model in zip((tier, sql), models, strict=True):
                await _run(session, model, "Where is tenant_id?")
            for _ in range(2):
                assert await tier.pop_item() == await sql.pop_item()
                assert await tier.get_items() == await sql.get_items()
            await tier.clear_session()
            await sql.clear_session()
            assert await tier.get_items() == [] == await sql.get_items()
            assert await tier.pop_item() is None
            for session, model in zip((tier, sql), models, strict=True):
                await _run(session, model, "And orders.total?")
            assert await tier.get_items() == await sql.get_items()
            tier.close()
            sql.close()

        asyncio.run(scenario())
        assert [c.input for c in models[0].calls] == [c.input for c in models[1].calls]


class TestJournal:
    def test_pop_and_clear_keep_the_full_history(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Every item added is still a turn; tierlog log shows the withdrawals; verify passes."""
        db = tmp_path / "t.db"
        model = ScriptedModel(_tool_runs())

        async def scenario() -> None:
            with TierlogSession("s", db) as session:
                await _run(session, model, "Where is tenant_id?")
                await session.pop_item()
                await _run(session, model, "And orders.total?")
                await session.clear_session()

        asyncio.run(scenario())
        assert rows(db, "SELECT count(*) FROM turns") == [(8,)]
        assert rows(db, "SELECT kind, from_turn, to_turn FROM withdrawals") == [
            ("retracted", 3, 4),
            ("cleared", 0, 8),
        ]
        capsys.readouterr()
        assert main(["log", str(db), "s", "--json"]) == 0
        log = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        types = [e["type"] for e in log]
        assert types.count("TurnAppended") == 8
        assert types[-1] == "ContextCleared"
        assert "TurnRetracted" in types
        contents = [json.loads(e["payload"]["content"]) for e in log if e["type"] == "TurnAppended"]
        assert contents[3]["content"][0]["text"] == "tenant_id is in 003_orders.sql"
        assert main(["verify", str(db)]) == 0

    def test_calls_open_and_resolve_with_their_items(self, tmp_path: Path) -> None:
        """A function_call opens a call, its output resolves it; a pending approval stays open."""
        model = ScriptedModel(_approval_runs())
        with TierlogSession("s", tmp_path / "t.db") as session:
            asyncio.run(_run(session, model, "Where is tenant_id?"))
            assert session.state.open_calls == {}
            assert "call-1" in session.state.call_ids
            result = asyncio.run(_run(session, model, "Deploy to prod."))
            assert result.interruptions
            assert list(session.state.open_calls) == ["call-9"]
            assert session.state.open_calls["call-9"].name == "deploy"

    def test_tokens_come_from_usage_else_an_estimate(self, tmp_path: Path) -> None:
        """A model's items count its reported output tokens; user input is estimated."""
        model = ScriptedModel(_tool_runs())
        with TierlogSession("s", tmp_path / "t.db") as session:
            asyncio.run(_run(session, model, "Where is tenant_id?"))
            turns = session.run(lambda s: s.turns())
        by_role = {t.role: t.tokens for t in turns}
        assert by_role["function_call"] == 12
        assert by_role["assistant"] == 9
        user = next(t for t in turns if t.role == "user")
        assert user.tokens == (len(user.content.encode()) + 3) // 4

    @pytest.mark.parametrize(
        "count", [float("nan"), float("inf"), 1.5, "many", -3, True, [12]], ids=repr
    )
    def test_junk_usage_falls_back_to_the_estimate(
        self, tmp_path: Path, count: object, caplog: pytest.LogCaptureFixture
    ) -> None:
        """An output token count that is not an integer >= 0 is ignored with a warning."""
        item: Any = {"role": "assistant", "content": "hello there"}
        with TierlogSession("s", tmp_path / "t.db") as session:
            with caplog.at_level(logging.WARNING, logger="tierlog"):
                asyncio.run(session.add_items([item], wrapper=_wrapper(count)))
            (turn,) = session.run(lambda s: s.turns())
        assert turn.tokens == (len(turn.content.encode()) + 3) // 4
        assert "usage_ignored" in caplog.text

    def test_absurd_usage_is_clamped_to_the_window(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Counts above window_tokens are clamped to it, and the session takes more items."""
        items: list[Any] = [
            {"role": "assistant", "content": "a"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        ]
        with TierlogSession("s", tmp_path / "t.db", config=EAGER) as session:
            with caplog.at_level(logging.WARNING, logger="tierlog"):
                for usage in (_wrapper(10**19), _wrapper(2**62, 2**62 - 1000)):
                    asyncio.run(session.add_items(list(items), wrapper=usage))
            asyncio.run(session.add_items([{"role": "user", "content": "next " * 800}]))
            turns = session.run(lambda s: s.turns())
            assert len(asyncio.run(session.get_items())) == 5
        assert sum(t.tokens for t in turns[:2]) == EAGER.window_tokens
        assert sum(t.tokens for t in turns[2:4]) == EAGER.window_tokens
        assert caplog.text.count("usage_clamped") == 2


def _wrapper(*counts: object) -> Any:
    """What the runner passes add_items: usage.request_usage_entries[*].output_tokens."""
    entries = [SimpleNamespace(output_tokens=c) for c in counts]
    return SimpleNamespace(usage=SimpleNamespace(request_usage_entries=entries))


def _forgetful(requests: list[SummaryRequest]) -> Callable[[SummaryRequest], Summary]:
    def summarize(request: SummaryRequest) -> Summary:
        requests.append(request)
        return Summary(text="We looked for tenant_id and talked about a deploy.")

    return summarize


CAREFUL = "tenant_id is in 003_orders.sql; deploy prod awaits approval."


def _careful(requests: list[SummaryRequest]) -> Summarizer:
    async def summarize(request: SummaryRequest) -> Summary:
        requests.append(request)
        return request.carry_all(CAREFUL)

    return summarize


class TestGatedCompaction:
    def _setup(self, tmp_path: Path, name: str, config: SessionConfig = EAGER) -> Any:
        """Two runs on a TierlogSession and its SQLiteSession twin: a pending approval."""
        tier = TierlogSession(name, tmp_path / f"{name}.db", config=config, keep_items=2)
        sql = SQLiteSession(name, tmp_path / f"{name}-sql.db")
        models = ScriptedModel(_approval_runs()), ScriptedModel(_approval_runs())

        async def runs() -> None:
            for session, model in zip((tier, sql), models, strict=True):
                await _run(session, model, "Where is tenant_id?")
                await _run(session, model, "Deploy to prod.")

        asyncio.run(runs())
        return tier, sql, models

    def test_summary_dropping_an_open_call_is_refused(self, tmp_path: Path) -> None:
        """The gate refuses it (M1), spills, and the next run sees the original items."""
        tier, sql, (t_model, q_model) = self._setup(tmp_path, "forgot")
        requests: list[SummaryRequest] = []
        tier.summarizer = _forgetful(requests)

        async def runs() -> None:
            for session, model in ((tier, t_model), (sql, q_model)):
                await _run(session, model, "Status?")
            assert await tier.get_items() == await sql.get_items()
            for session, model in ((tier, t_model), (sql, q_model)):
                await _run(session, model, "Thanks.")
            assert await tier.get_items() == await sql.get_items()

        asyncio.run(runs())
        assert [c.call_id for c in requests[0].open_calls] == ["call-9"]
        assert [c.input for c in t_model.calls] == [c.input for c in q_model.calls]
        types = _types(tier)
        assert "Compacted" not in types
        assert types.count("CompactionRefused") == len(requests) == 2
        refusal = rows(tmp_path / "forgot.db", "SELECT rules, action FROM compaction_refusals")
        assert refusal[0] == ("M1", "spilled")
        assert list((tmp_path / "forgot.db.spills").iterdir())
        assert main(["verify", str(tmp_path / "forgot.db")]) == 0
        tier.close()
        sql.close()

    def test_summary_carrying_it_commits_and_the_next_run_sees_summary_and_tail(
        self, tmp_path: Path
    ) -> None:
        """Committed: get_items is the summary item, then the retained tail; so is the input."""
        tier, sql, (t_model, _) = self._setup(tmp_path, "kept")
        requests: list[SummaryRequest] = []
        tier.summarizer = _careful(requests)

        async def runs() -> list[Any]:
            await _run(tier, t_model, "Status?")
            items: list[Any] = await tier.get_items()
            await _run(tier, t_model, "Thanks.")
            return items

        items = asyncio.run(runs())
        first = requests[0]
        assert items == [{"role": "system", "content": CAREFUL}, *first.retained]
        assert _kinds(first.retained) == ["user", "message"]
        assert "function_call" in _kinds(first.items)
        assert t_model.calls[-1].input == [*items, {"content": "Thanks.", "role": "user"}]
        state = tier.state
        node = next(n for n in state.nodes.values() if n.live)
        assert node.unresolved_ids == ("call-9",)
        assert main(["verify", str(tmp_path / "kept.db")]) == 0
        tier.close()
        sql.close()

    def test_halt_raises_out_of_the_run(self, tmp_path: Path) -> None:
        """With on_unsafe="halt" the refusal ends Runner.run; it is recorded, nothing spilled."""
        halt = SessionConfig(
            window_tokens=100_000, trigger_tokens=1, truncator_unit="turns",
            floor_span=2, floor_unit="turns", on_unsafe="halt",
        )  # fmt: skip
        tier, sql, (t_model, _) = self._setup(tmp_path, "halt", halt)
        tier.summarizer = _forgetful([])
        with pytest.raises(UnrecoverableCompactionError) as refused:
            asyncio.run(_run(tier, t_model, "Status?"))
        assert refused.value.action == "halted"
        assert [v.rule for v in refused.value.violations] == ["M1"]
        assert _types(tier).count("CompactionRefused") == 1
        assert "Spilled" not in _types(tier)
        tier.close()
        sql.close()

    def test_output_of_a_summarized_call_brings_the_call_back(self, tmp_path: Path) -> None:
        """When a carried call's output arrives, the call item shows again right before it."""
        tier, sql, (t_model, _) = self._setup(tmp_path, "back")
        tier.summarizer = _careful([])
        asyncio.run(_run(tier, t_model, "Status?"))
        output = {"call_id": "call-9", "output": "deployed to prod", "type": "function_call_output"}
        asyncio.run(tier.add_items([output]))
        items = asyncio.run(tier.get_items())
        assert _kinds(items)[0] == "system"
        assert items[-2]["type"] == "function_call"
        assert items[-2]["call_id"] == "call-9"
        assert items[-1] == output
        assert _no_orphan_outputs(items)
        assert tier.state.open_calls == {}
        tier.close()
        sql.close()

    def test_tail_never_cuts_an_output_from_its_call(self, tmp_path: Path) -> None:
        """keep_items=1 after a tool call keeps the call with its output (and the answer)."""
        session = TierlogSession("s", tmp_path / "t.db", config=EAGER, keep_items=1)
        requests: list[SummaryRequest] = []

        async def scenario() -> list[Any]:
            await session.add_items(
                [
                    {"role": "user", "content": "Where is tenant_id?"},
                    {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "c1", "output": "003.sql"},
                ]
            )
            session.summarizer = _careful(requests)
            assert await session.compact(force=True) is not None
            return await session.get_items()

        items = asyncio.run(scenario())
        assert _kinds(items) == ["system", "function_call", "function_call_output"]
        assert _kinds(requests[0].items) == ["user"]
        session.close()

    def test_a_second_compaction_replaces_the_first(self, tmp_path: Path) -> None:
        """The previous summary is handed over first and replaced by a tier-2 digest."""
        session = TierlogSession("s", tmp_path / "t.db", config=EAGER, keep_items=1)
        requests: list[SummaryRequest] = []
        session.summarizer = _careful(requests)

        async def scenario() -> list[Any]:
            for n in range(6):
                await session.add_items([{"role": "user", "content": f"message {n}"}])
                if n in (2, 5):
                    await session.compact()
            return await session.get_items()

        items = asyncio.run(scenario())
        assert _kinds(items) == ["system", "user"]
        assert requests[1].items[0]["role"] == "system"
        nodes = sorted(session.state.nodes.values(), key=lambda n: n.version)
        assert [(n.tier, n.live) for n in nodes] == [(1, False), (2, True)]
        assert nodes[1].replaces == (nodes[0].node_id,)
        session.close()

    def test_floor_reaches_into_the_previous_summary(self, tmp_path: Path) -> None:
        """With few new items, the summarizer also gets the floor's raw items (C2 holds)."""
        config = SessionConfig(
            window_tokens=100_000, trigger_tokens=1, truncator_unit="turns",
            floor_span=4, floor_unit="turns", on_unsafe="halt",
        )  # fmt: skip
        session = TierlogSession("s", tmp_path / "t.db", config=config, keep_items=1)
        requests: list[SummaryRequest] = []
        session.summarizer = _careful(requests)

        async def scenario() -> None:
            for n in range(8):
                await session.add_items([{"role": "user", "content": f"message {n}"}])
                if n in (5, 7):
                    assert await session.compact() is not None

        asyncio.run(scenario())
        assert [i["content"] for i in requests[1].items] == [
            CAREFUL,
            "message 3",
            "message 4",
            "message 5",
            "message 6",
        ]
        node = next(n for n in session.state.nodes.values() if n.live)
        assert (node.input_lo, node.covers_lo, node.tail_start) == (3, 0, 7)
        session.close()

    def test_popping_the_only_summary_clears_the_context(self, tmp_path: Path) -> None:
        """pop_item returns the summary item when it is all that is left, via ContextCleared."""
        session = TierlogSession("s", tmp_path / "t.db", config=EAGER, keep_items=1)
        session.summarizer = _careful([])

        async def scenario() -> list[Any]:
            await session.add_items([{"role": "user", "content": f"m{n}"} for n in range(3)])
            await session.compact()
            popped = [await session.pop_item(), await session.pop_item()]
            return [*popped, await session.get_items(), await session.pop_item()]

        last, summary, left, nothing = asyncio.run(scenario())
        assert last == {"role": "user", "content": "m2"}
        assert summary["role"] == "system"
        assert (left, nothing) == ([], None)
        assert _types(session)[-2:] == ["TurnRetracted", "ContextCleared"]
        assert session.state.occupancy == 0
        session.close()

    def test_below_the_trigger_nothing_happens(self, tmp_path: Path) -> None:
        """Under the trigger run_compaction writes nothing unless forced."""
        session = TierlogSession("s", tmp_path / "t.db", summarizer=_careful([]), keep_items=1)
        asyncio.run(session.add_items([{"role": "user", "content": "hi"}] * 3))
        version = session.state.version
        asyncio.run(session.run_compaction({"response_id": "r", "force": False}))
        assert session.state.version == version
        asyncio.run(session.run_compaction({"force": True}))
        assert "Compacted" in _types(session)
        session.close()


def _raising(request: SummaryRequest) -> Summary:
    raise TimeoutError("summarizer model timed out")


async def _claims_a_ghost_call(request: SummaryRequest) -> Summary:
    return Summary(text="s", unresolved_ids=["call-that-never-existed"])


def _claims_a_ghost_constraint(request: SummaryRequest) -> Summary:
    return attrs.evolve(request.carry_all("s"), constraints=["ghost"])


def _not_a_summary(request: SummaryRequest) -> Any:
    return "just text"


FAILING: dict[str, Callable[[SummaryRequest], Any]] = {
    "raises": _raising,
    "unknown call": _claims_a_ghost_call,
    "unknown constraint": _claims_a_ghost_constraint,
    "not a Summary": _not_a_summary,
}
HALT = attrs.evolve(EAGER, on_unsafe="halt")


class TestFailingSummarizer:
    async def _two_runs(self, session: TierlogSession) -> None:
        model = ScriptedModel([[assistant_message("one")], [assistant_message("two")]])
        agent = Agent(name="dev", model=model)
        await Runner.run(agent, "first", session=session)
        await Runner.run(agent, "second", session=session)

    @pytest.mark.parametrize("summarizer", FAILING.values(), ids=FAILING.keys())
    def test_spill_mode_logs_it_and_the_run_goes_on(
        self,
        tmp_path: Path,
        summarizer: Callable[[SummaryRequest], Any],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """With on_unsafe="spill" the runs finish, a warning says why, nothing is committed."""
        db = tmp_path / "t.db"
        session = TierlogSession("s", db, config=EAGER, summarizer=summarizer, keep_items=1)
        with caplog.at_level(logging.WARNING, logger="tierlog"):
            asyncio.run(self._two_runs(session))
        items = asyncio.run(session.get_items())
        assert [i.get("role") for i in items] == ["user", "assistant"] * 2
        assert set(_types(session)) == {"SessionStarted", "TurnAppended"}
        assert caplog.text.count("compaction_failed") == 2
        session.close()
        assert main(["verify", str(db)]) == 0

    def test_halt_mode_ends_the_run_with_a_summarizer_error(self, tmp_path: Path) -> None:
        """With on_unsafe="halt" a crashing summarizer is a SummarizerError; nothing written."""
        session = TierlogSession(
            "s", tmp_path / "t.db", config=HALT, summarizer=_raising, keep_items=1
        )
        with pytest.raises(SummarizerError, match="TimeoutError") as failed:
            asyncio.run(self._two_runs(session))
        assert isinstance(failed.value, eventstore.JournalError)
        assert isinstance(failed.value.__cause__, TimeoutError)
        assert set(_types(session)) == {"SessionStarted", "TurnAppended"}
        session.close()

    def test_halt_mode_ends_the_run_on_an_invalid_summary(self, tmp_path: Path) -> None:
        """With on_unsafe="halt" a summary claiming an unknown call is InvalidEvent."""
        session = TierlogSession(
            "s", tmp_path / "t.db", config=HALT, summarizer=_not_a_summary, keep_items=1
        )
        with pytest.raises(eventstore.InvalidEvent, match="not a Summary"):
            asyncio.run(self._two_runs(session))
        session.summarizer = _claims_a_ghost_call
        with pytest.raises(eventstore.InvalidEvent, match="unknown call"):
            asyncio.run(session.run_compaction({"force": True}))
        assert set(_types(session)) == {"SessionStarted", "TurnAppended"}
        session.close()


CLAIMS: dict[str, dict[str, Any]] = {
    "unknown call": {"unresolved_ids": ["c2", "ghost"]},
    "call both ways": {"resolved_ids": ["c2"], "unresolved_ids": ["c2"]},
    "unknown constraint": {"constraints": ["k", "ghost"]},
    "unknown negative fact": {"dispositions": {"f": "rejected", "ghost": "failed"}},
    "wrong disposition": {"dispositions": {"f": "failed"}},
}


class TestSummaryClaims:
    def _session(self, tmp_path: Path, changes: dict[str, Any]) -> TierlogSession:
        def summarize(request: SummaryRequest) -> Summary:
            return attrs.evolve(request.carry_all("s"), **changes)

        session = TierlogSession("s", tmp_path / "t.db", config=EAGER, keep_items=2)
        items: list[Any] = [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
        ]
        asyncio.run(session.add_items(items))
        session.state_constraint("k", "never touch /etc")
        session.dispose("f", "rejected", "the user said no")
        more = [{"role": r, "content": str(n)} for n, r in enumerate(["user", "assistant"] * 2)]
        asyncio.run(session.add_items(cast(list[Any], more)))
        session.summarizer = summarize
        return session

    @pytest.mark.parametrize("changes", CLAIMS.values(), ids=CLAIMS.keys())
    def test_a_claim_about_nothing_is_invalid(
        self, tmp_path: Path, changes: dict[str, Any]
    ) -> None:
        """Every claim is checked the same way: InvalidEvent, nothing written."""
        session = self._session(tmp_path, changes)
        version = session.state.version
        with pytest.raises(eventstore.InvalidEvent, match="the summary claims"):
            asyncio.run(session.compact(force=True))
        assert session.state.version == version
        session.close()

    def test_true_claims_commit(self, tmp_path: Path) -> None:
        """The same session with every claim true compacts."""
        session = self._session(tmp_path, {})
        node = asyncio.run(session.compact(force=True))
        assert node is not None
        assert (node.unresolved_ids, node.constraints) == (("c2",), ("k",))
        assert dict(node.dispositions) == {"f": "rejected"}
        session.close()


class TestDocsExample:
    def test_example_runs_as_printed(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """docs/openai-agents.md's example runs in an empty folder and prints what it says."""
        out = run_page(PAGE, tmp_path)
        assert out.splitlines() == [
            "['M1']",
            "('no-etc',)",
            "['system', 'user', 'assistant']",
        ]
        db = tmp_path / "agents.db"
        capsys.readouterr()
        assert main(["log", str(db), "mig-42"]) == 0
        types = [line.split()[1] for line in capsys.readouterr().out.splitlines()]
        assert {"CallOpened", "CallResolved", "ConstraintStated", "Spilled"} <= set(types)
        assert types[-2:] == ["CompactionRefused", "Compacted"]
        assert main(["verify", str(db)]) == 0
