"""TierlogSession after the openai_agents split, attacked by a hostile user: what must
not have changed, and the defects found on the way."""

from __future__ import annotations

import asyncio
import copy
import logging
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import eventstore
import eventstore.openai_agents as public
from eventstore.cli import main
from eventstore.openai_agents import Summary, SummaryRequest, TierlogSession
from tests.openai_agents.test_openai_agents import EAGER

ROOT = Path(__file__).resolve().parents[2]
SID = "s"

# pickle.dumps of these values by tierlog before the split (commit 4705a6d), when the
# classes lived in eventstore.openai_agents itself.
OLD_SUMMARY_PICKLE = (
    b"\x80\x04\x95\xa3\x00\x00\x00\x00\x00\x00\x00\x8c\x18eventstore.openai_agents\x94"
    b"\x8c\x07Summary\x94\x93\x94)\x81\x94}\x94(\x8c\x04text\x94\x8c\x01t\x94\x8c\x0cresolved"
    b"_ids\x94\x8c\x02c1\x94\x85\x94\x8c\x0eunresolved_ids\x94)\x8c\x0bconstraints\x94\x8c\x01k"
    b"\x94\x85\x94\x8c\x0cdispositions\x94}\x94\x8c\x01a\x94\x8c\x08rejected\x94s\x8c\x06tokens"
    b"\x94K\x03ub."
)
OLD_ERROR_PICKLE = (
    b"\x80\x04\x95;\x00\x00\x00\x00\x00\x00\x00\x8c\x18eventstore.openai_agents\x94\x8c\x0f"
    b"SummarizerError\x94\x93\x94\x8c\x04boom\x94\x85\x94R\x94."
)


def _msg(role: str, text: str) -> Any:
    return {"role": role, "content": text}


def _call(call_id: str) -> Any:
    return {"type": "function_call", "call_id": call_id, "name": "grep", "arguments": "{}"}


def _output(call_id: str) -> Any:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


def _types(session: TierlogSession) -> list[str]:
    return session.run(lambda s: [type(e).__name__ for e in s.events()])


class TestPublicModule:
    def test_every_name_in_all_imports(self) -> None:
        """Every name in ``__all__`` is there, and the classes are the private modules' own."""
        from eventstore.openai_agents import _summary as _agents_summary

        assert sorted(public.__all__) == [
            "DEFAULT_CONFIG",
            "Summarizer",
            "SummarizerError",
            "Summary",
            "SummaryRequest",
            "TierlogSession",
        ]
        assert all(getattr(public, name) is not None for name in public.__all__)
        assert public.Summary is _agents_summary.Summary
        assert public.SummarizerError is _agents_summary.SummarizerError

    def test_without_the_sdk_the_import_error_names_the_extra(self, tmp_path: Path) -> None:
        """With an ``agents`` that fails to import first on sys.path, importing the module
        is the same ImportError as before the split, the SDK's error its cause."""
        (tmp_path / "agents").mkdir()
        (tmp_path / "agents" / "__init__.py").write_text('raise ImportError("no SDK here")\n')
        probe = (
            "import eventstore.openai_agents\n"
            "print('imported')\n"
        )  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=ROOT,
            env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": ""},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 1
        assert "imported" not in done.stdout
        last = done.stderr.strip().splitlines()[-1]
        assert last == (
            "ImportError: eventstore.openai_agents needs the OpenAI Agents SDK:"
            " pip install 'tierlog[openai-agents]'"
        )
        assert "ImportError: no SDK here" in done.stderr  # the cause, chained

    def test_a_pickle_from_before_the_split_still_loads(self) -> None:
        """A Summary and a SummarizerError pickled when they lived in openai_agents load."""
        summary = pickle.loads(OLD_SUMMARY_PICKLE)
        assert summary == Summary(
            text="t", resolved_ids=["c1"], constraints=["k"], dispositions={"a": "rejected"},
            tokens=3,
        )  # fmt: skip
        error = pickle.loads(OLD_ERROR_PICKLE)
        assert type(error) is public.SummarizerError
        assert str(error) == "boom"

    def test_summaries_pickle_and_copy_to_equal_values(self) -> None:
        """A Summary survives pickle and deepcopy equal, its odd text included."""
        summary = Summary(text="☃ \ud800", unresolved_ids=("c",), dispositions={"k": "failed"})
        assert pickle.loads(pickle.dumps(summary)) == summary == copy.deepcopy(summary)

    def test_summaries_are_values_a_set_can_hold(self) -> None:
        """Equal summaries hash alike (a summarizer may cache or dedupe them)."""
        one = Summary(text="t", constraints=["k"], dispositions={"a": "rejected"})
        same = Summary(text="t", constraints=("k",), dispositions={"a": "rejected"})
        other = Summary(text="t", constraints=["k"], dispositions={"a": "failed"})
        assert len({one, same, other}) == 2
        assert hash(one) == hash(same)


class TestJournalThread:
    def test_every_call_after_close_is_a_clear_error(self, tmp_path: Path) -> None:
        """After close (twice, from another thread) every method is JournalError naming
        the session, an empty or bad batch included, and nothing more is written."""
        session = TierlogSession(SID, tmp_path / "t.db", summarizer=lambda r: r.carry_all("x"))
        asyncio.run(session.add_items([_msg("user", "hi")]))
        closer = threading.Thread(target=session.close)
        closer.start()
        closer.join()
        session.close()
        closed = "TierlogSession 's' is closed"
        calls: list[Any] = [
            lambda: asyncio.run(session.get_items()),
            lambda: asyncio.run(session.add_items([])),
            lambda: asyncio.run(session.add_items(["not an item"])),  # type: ignore[list-item]
            lambda: asyncio.run(session.pop_item()),
            lambda: asyncio.run(session.clear_session()),
            lambda: asyncio.run(session.run_compaction({"force": True})),
            lambda: asyncio.run(session.compact(force=True)),
            lambda: session.state,
            lambda: session.run(lambda s: s.state),
            lambda: session.state_constraint("k", "rule"),
            lambda: session.lift_constraint("k"),
            lambda: session.dispose("k", "rejected", "no"),
        ]
        for call in calls:
            with pytest.raises(eventstore.JournalError, match=closed):
                call()
        with eventstore.open(tmp_path / "t.db") as journal:
            assert [type(e).__name__ for e in journal.session(SID).events()] == [
                "SessionStarted",
                "TurnAppended",
            ]

    def test_a_session_coroutine_run_on_the_journal_thread_does_not_hang(
        self, tmp_path: Path
    ) -> None:
        """A run(fn) callback that runs the session's coroutines in a loop of its own (on
        the journal thread) gets them done there, not a thread waiting on itself."""
        session = TierlogSession(SID, tmp_path / "t.db")
        asyncio.run(session.add_items([_msg("user", "hi")]))

        def inside(_: eventstore.Session) -> object:
            async def steps() -> object:
                await session.add_items([_msg("user", "from the journal thread")])
                popped = await session.pop_item()
                return popped, await session.get_items()

            async def bounded() -> object:
                return await asyncio.wait_for(steps(), timeout=3)

            try:
                return asyncio.run(bounded())
            except TimeoutError:
                return "hung"

        assert session.run(inside) == (
            _msg("user", "from the journal thread"),
            [_msg("user", "hi")],
        )
        session.close()

    def test_a_journal_of_another_thread_is_a_clear_error(self, tmp_path: Path) -> None:
        """A Journal opened on another thread cannot be used here: JournalError, as the
        README says, not SQLite's ProgrammingError; opened here, it works."""
        opened: list[eventstore.Journal] = []
        opener = threading.Thread(target=lambda: opened.append(eventstore.open(tmp_path / "j.db")))
        opener.start()
        opener.join()
        with pytest.raises(eventstore.JournalError, match="belongs to the thread that opened it"):
            TierlogSession("s", opened[0])
        with eventstore.open(tmp_path / "j.db") as here, TierlogSession("s", here) as session:
            asyncio.run(session.add_items([_msg("user", "hi")]))
            assert session.state.turns == 1

    def test_a_copy_of_a_closed_session_is_closed_too(self, tmp_path: Path) -> None:
        """A shallow copy shares the journal thread, so it is closed with the original:
        JournalError (before the split its own flag said open and the executor raised
        RuntimeError)."""
        session = TierlogSession(SID, tmp_path / "t.db")
        twin = copy.copy(session)
        session.close()
        with pytest.raises(eventstore.JournalError, match="is closed"):
            asyncio.run(twin.get_items())
        twin.close()


class TestWriters:
    def test_a_plan_another_writer_moved_is_dropped(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """While the summarizer runs another TierlogSession appends: the commit at the
        planned version is dropped (None, logged), nothing is compacted, no item lost."""
        db = tmp_path / "t.db"
        other = TierlogSession(SID, db, config=EAGER)

        async def slow(request: SummaryRequest) -> Summary:
            await other.add_items([_msg("user", "meanwhile")])
            return request.carry_all("late")

        session = TierlogSession(SID, db, summarizer=slow, keep_items=1)
        items = [_msg("user", "a"), _call("c1"), _output("c1"), _msg("assistant", "b")]
        asyncio.run(session.add_items(items))
        with caplog.at_level(logging.INFO, logger="tierlog"):
            assert asyncio.run(session.compact(force=True)) is None
        assert "compaction dropped" in caplog.text
        assert "Compacted" not in _types(session)
        assert asyncio.run(session.get_items()) == [*items, _msg("user", "meanwhile")]
        session.summarizer = lambda request: request.carry_all("now")
        node = asyncio.run(session.compact(force=True))  # nothing moved this time
        assert node is not None
        assert node.summary == "now"
        session.close()
        other.close()

    def test_tasks_and_threads_lose_no_item(self, tmp_path: Path) -> None:
        """Six asyncio tasks and three threads add, pop and read at once: every item
        not popped is there, each call resolved, and the journal verifies."""
        db = tmp_path / "t.db"
        session = TierlogSession(SID, db)

        async def task(k: int) -> None:
            for i in range(6):
                await session.add_items([_msg("user", f"{k}-{i}"), _call(f"c{k}-{i}")])
                await session.add_items([_output(f"c{k}-{i}")])
                await session.get_items(3)
            await session.pop_item()

        async def tasks() -> None:
            await asyncio.gather(*(task(k) for k in range(6)))

        def thread(k: int) -> None:
            for i in range(6):
                asyncio.run(session.add_items([_msg("user", f"t{k}-{i}")]))
                session.state_constraint(f"k{k}-{i}", "rule")

        workers = [threading.Thread(target=thread, args=(k,)) for k in range(3)]
        for worker in workers:
            worker.start()
        asyncio.run(tasks())
        for worker in workers:
            worker.join()
        state = session.state
        items = asyncio.run(session.get_items())
        assert len(items) == 6 * 6 * 3 + 3 * 6 - 6
        assert state.open_calls == {}
        assert len(state.constraints) == 3 * 6
        assert _types(session).count("TurnRetracted") == 6
        session.close()
        assert main(["verify", str(db)]) == 0


class TestKeepItems:
    @pytest.mark.parametrize("keep", [0, 1, 3, 10**6])
    def test_any_count_compacts_or_declines_cleanly(self, tmp_path: Path, keep: int) -> None:
        """keep_items 0 folds every item, one past the view folds none (None)."""
        session = TierlogSession(
            SID, tmp_path / "t.db", config=EAGER, keep_items=keep,
            summarizer=lambda request: request.carry_all(f"{len(request.items)} items"),
        )  # fmt: skip
        items = [_msg("user", "a"), _call("c1"), _output("c1"), _msg("assistant", "b")]
        asyncio.run(session.add_items(items))
        node = asyncio.run(session.compact(force=True))
        shown = asyncio.run(session.get_items())
        if keep >= len(items):
            assert node is None
            assert shown == items
        else:
            assert node is not None
            assert shown[0] == {"role": "system", "content": node.summary}
            assert shown[1:] == items[len(items) - keep :]
        session.close()

    @pytest.mark.parametrize("keep", [-1, True, 1.0, "2", None])
    def test_a_bad_count_set_later_is_refused_like_one_given(
        self, tmp_path: Path, keep: object
    ) -> None:
        """Setting keep_items to what the constructor refuses is the same InvalidEvent,
        not an IndexError or TypeError out of the next compaction."""
        message = f"keep_items must be an integer >= 0, not {keep!r}"
        with pytest.raises(eventstore.InvalidEvent) as given:
            TierlogSession(SID, tmp_path / "t.db", keep_items=keep)  # type: ignore[arg-type]
        assert str(given.value) == message
        session = TierlogSession(
            SID, tmp_path / "t.db", config=EAGER, keep_items=2,
            summarizer=lambda request: request.carry_all("x"),
        )  # fmt: skip
        asyncio.run(session.add_items([_msg("user", str(n)) for n in range(4)]))
        with pytest.raises(eventstore.InvalidEvent) as set_later:
            session.keep_items = keep  # type: ignore[assignment]
        assert str(set_later.value) == message
        assert session.keep_items == 2
        assert asyncio.run(session.compact(force=True)) is not None
        session.close()


def _deep(levels: int) -> Any:
    item: Any = "bottom"
    for _ in range(levels):
        item = [item]
    return {"role": "user", "content": item}


class TestStrictItems:
    @pytest.mark.parametrize(
        ("item", "problem"),
        [
            ({"role": "user", "content": "x", "score": float("nan")}, "nan is not a JSON number"),
            ({"role": "user", "content": "x", "score": float("inf")}, "inf is not a JSON number"),
            ({"role": "user", "content": "bad \ud800 text"}, "lone surrogate"),
            ({"role": "user", "content": {1: "x"}}, "key is not text"),
            ({"role": "user", "content": b"bytes"}, "a bytes is not JSON"),
            (_deep(5_000), "nested deeper than 200 levels"),
            ({**_call("c1"), "call_id": None}, "function_call item needs a call_id"),
            ({**_output("c1"), "call_id": ""}, "function_call_output item needs a call_id"),
        ],
        ids=["nan", "inf", "surrogate", "int key", "bytes", "deep", "call_id None", "empty id"],
    )
    def test_an_item_that_is_not_strict_json_is_refused(
        self, tmp_path: Path, item: Any, problem: str
    ) -> None:
        """Anything get_items could not hand back exactly is InvalidEvent, naming the item
        and what is wrong; nothing of the batch is written."""
        with TierlogSession(SID, tmp_path / "a.db") as session:
            before = _types(session)
            with pytest.raises(eventstore.InvalidEvent, match=f"item 1.*{problem}"):
                asyncio.run(session.add_items([_msg("user", "fine"), item]))
            assert _types(session) == before

    def test_an_item_200_deep_round_trips(self, tmp_path: Path) -> None:
        """An item nested as deep as allowed comes back from get_items as it went in."""
        with TierlogSession(SID, tmp_path / "a.db") as session:
            asyncio.run(session.add_items([_deep(199)]))
            assert asyncio.run(session.get_items()) == [_deep(199)]

    @pytest.mark.parametrize("limit", ["a", 1.5, True])
    def test_a_limit_that_is_not_a_number_is_invalid_argument(
        self, tmp_path: Path, limit: Any
    ) -> None:
        """get_items("a") is InvalidArgument (also a ValueError), not a TypeError."""
        with (
            TierlogSession(SID, tmp_path / "a.db") as session,
            pytest.raises(eventstore.InvalidArgument, match="limit must be"),
        ):
            asyncio.run(session.get_items(limit))

    def test_read_spill_of_none_is_invalid_argument(self, tmp_path: Path) -> None:
        """read_spill(None) is InvalidArgument, not an AttributeError."""
        with (
            TierlogSession(SID, tmp_path / "a.db") as session,
            pytest.raises(eventstore.InvalidArgument, match="Spill or its handle"),
        ):
            session.run(lambda s: s.read_spill(None))  # type: ignore[arg-type]
