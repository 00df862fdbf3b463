"""The Session API: every command is one checked commit; bad input writes nothing.

Every test runs on both backends (SQLite and PostgreSQL).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import eventstore
import reducers
from eventstore import Session
from tests import strategies
from tests.helpers import fill, new_session
from tests.tampers import behind, forge_chain
from tests.targets import Target, on_both

pytestmark = on_both


@pytest.fixture(name="s")
def _session(journal: eventstore.Journal) -> Session:
    s = new_session(journal)
    fill(s, 10)
    return s


def _compact(s: Session, **changes: Any) -> eventstore.Node:
    args: dict[str, Any] = {
        "tier": 1,
        "input": (0, 8),
        "covers": (0, 8),
        "tail_start": 8,
        "summary": "s",
        "tokens": 5,
    }
    return s.compact(**{**args, **changes})


class TestCommands:
    def test_append_turn_returns_the_turn(self, s: Session) -> None:
        """append_turn gives index and token start; the state counts it."""
        turn = s.append_turn("user", "hi", 7)
        assert (turn.index, turn.tok_start, turn.tokens) == (10, 100, 7)
        assert (s.state.turns, s.state.tokens_total) == (11, 107)

    def test_obligations_are_tracked(self, s: Session) -> None:
        """Open calls, pending constraints and negative facts show in the state."""
        s.open_call("c1", "subprocess", "make")
        s.state_constraint("k", "never /etc")
        s.dispose("plan-a", "failed", "boom")
        s.resolve_call("c1", "ok")
        s.lift_constraint("k")
        st = s.state
        assert (dict(st.open_calls), dict(st.constraints)) == ({}, {})
        assert st.dispositions["plan-a"].disposition == "failed"
        assert st.dispositions["plan-a"].position == 9

    def test_compaction_commits_a_live_node(self, s: Session) -> None:
        """A safe compaction adds a live node with a deterministic id; occupancy drops."""
        node = _compact(s)
        assert (node.node_id, node.live, node.tier) == ("n12", True, 1)
        assert s.state.occupancy == 100 - 80 + 5
        assert s.state.tail_start == 8

    def test_checkpoint_records_the_end(self, s: Session) -> None:
        """checkpoint() returns the log's end position."""
        assert s.checkpoint() == 10

    def test_reopen_sees_the_same_state(self, target: Target, s: Session) -> None:
        """A second Journal on the database rebuilds the same state hash."""
        _compact(s)
        with target.open() as again:
            assert again.session("s").state.sha256 == s.state.sha256

    def test_session_sees_other_writers(self, target: Target, s: Session) -> None:
        """A commit from another connection is folded in before the next decision."""
        with target.open() as other:
            other.session("s").append_turn("user", "from elsewhere", 1)
        turn = s.append_turn("user", "mine", 1)
        assert turn.index == 11

    def test_expected_version_mismatch(self, s: Session) -> None:
        """An explicit expected version that is stale raises ConcurrencyError."""
        with pytest.raises(eventstore.ConcurrencyError):
            s.append_turn("user", "x", 1, expected_version=3)
        s.append_turn("user", "x", 1, expected_version=s.version)

    def test_events_are_those_committed_when_asked(self, target: Target, s: Session) -> None:
        """``events()`` yields the events committed when it was called, however the
        session grows while they are read: from this session or another writer."""
        fill(s, 1_500)
        head = s.version
        seen = 0
        with target.open() as other:
            elsewhere = other.session("s")
            for seen, _ in enumerate(s.events(), 1):
                s.append_turn("user", "while reading", 1)
                if seen % 100 == 0:
                    elsewhere.append_turn("user", "from elsewhere", 1)
        assert seen == head
        assert s.version == 2 * head + head // 100

    def test_state_at_replays_a_prefix(self, s: Session) -> None:
        """state_at(v) equals folding the first v events."""
        events = list(s.events())
        assert s.state_at(5).sha256 == reducers.fold(events[:5]).sha256
        with pytest.raises(eventstore.InvalidArgument):
            s.state_at(99)


class TestRefusals:
    def test_refused_compaction_with_halt_writes_no_spill(self, s: Session) -> None:
        """on_unsafe='halt': only CompactionRefused is written, action 'halted'."""
        with pytest.raises(eventstore.UnrecoverableCompactionError) as err:
            _compact(s, covers=(0, 7))
        assert err.value.action == "halted"
        last = list(s.events(start=s.version))
        assert [type(e).__name__ for e in last] == ["CompactionRefused"]
        assert s.state.spills == reducers.SessionState().spills
        assert s.state.nodes == {}

    def test_refused_marker_is_recorded(self, s: Session) -> None:
        """MarkerInvalid carries the violations, and MarkerRefused is in the log."""
        s.state_constraint("k", "t")
        node = _compact(s, input=(0, 10), covers=(0, 10), tail_start=10)
        with pytest.raises(eventstore.MarkerInvalid) as err:
            s.emit_marker(node.node_id)
        assert [v.rule for v in err.value.violations] == ["M1"]
        assert type(next(iter(s.events(start=s.version)))).__name__ == "MarkerRefused"

    def test_spills_outside_the_floor_are_not_read(self, target: Target, s: Session) -> None:
        """C3 only needs spills reaching into the floor; a broken one elsewhere is harmless."""
        s.truncate(0, 2, "budget")
        spill = s.spill(0, 2)
        target.set_spill(spill.handle, None)
        assert _compact(s).live  # floor [6, 8): the missing file never mattered

    def test_tampered_spill_no_longer_excuses_c3(self, target: Target, s: Session) -> None:
        """C3 trusts a spill only while its stored bytes match its sha256."""
        s.truncate(6, 7, "budget")
        spill = s.spill(6, 7)
        _compact(s)
        target.set_spill(spill.handle, b"edited")
        with pytest.raises(eventstore.UnrecoverableCompactionError) as err:
            _compact(s, covers=(0, 8), replaces=["n14"])
        assert [v.rule for v in err.value.violations] == ["C3"]


class TestResume:
    def test_digest_holds_live_summaries_and_tail(self, s: Session) -> None:
        """A valid marker resumes to the live summaries plus the verbatim tail."""
        marker = s.emit_marker(_compact(s).node_id)
        ctx = s.resume(marker.marker_id)
        lines = [json.loads(line) for line in ctx.content.splitlines()]
        assert ctx.source == "digest"
        assert [line["kind"] for line in lines] == ["summary", "turn", "turn"]
        assert [line.get("index") for line in lines[1:]] == [8, 9]

    def test_every_resume_is_recorded(self, s: Session) -> None:
        """Resumed carries the source and the context's sha256."""
        marker = s.emit_marker(_compact(s).node_id)
        ctx = s.resume(marker.marker_id)
        (event,) = s.events(start=s.version)
        assert isinstance(event, eventstore.Resumed)
        assert (event.source, event.context_sha256) == ("digest", ctx.sha256)

    def test_raw_fallback_uses_the_nearest_checkpoint_at_or_below_covers_hi(
        self, journal: eventstore.Journal
    ) -> None:
        """Checkpoints at 3, 6 and 9, covers_hi 8: the raw context is exactly turns 0-5."""
        s = new_session(journal, "cp")
        checkpoints = []
        for i in range(10):
            s.append_turn("user", f"t{i}", 10)
            if i in (2, 5, 8):
                checkpoints.append(s.checkpoint())
        assert checkpoints == [3, 6, 9]
        node = _compact(s)
        marker = s.emit_marker(node.node_id)
        _compact(s, tier=2, replaces=[node.node_id])  # re-framed by L2: M3 invalidates it
        ctx = s.resume(marker.marker_id)
        assert (ctx.source, ctx.checkpoint_at) == ("raw_checkpoint", 6)
        assert [json.loads(line)["index"] for line in ctx.content.splitlines()] == list(range(6))

    def test_raw_fallback_without_checkpoint_is_empty(self, s: Session) -> None:
        """With no checkpoint at or below covers_hi and no live obligation, the raw
        context is empty (position 0)."""
        node = _compact(s)
        marker = s.emit_marker(node.node_id)
        _compact(s, tier=2, replaces=[node.node_id])
        ctx = s.resume(marker.marker_id)
        assert (ctx.source, ctx.checkpoint_at, ctx.content) == ("raw_checkpoint", 0, "")

    def test_raw_fallback_holds_the_turns_of_live_obligations(self, s: Session) -> None:
        """Past the checkpoint, a raw context holds the turn of each live obligation."""
        s.dispose("plan-a", "rejected", "no")
        node = _compact(s, input=(0, 10), covers=(0, 10), tail_start=10)
        with pytest.raises(eventstore.MarkerInvalid) as err:
            s.emit_marker(node.node_id)
        ctx = s.resume(err.value.marker_id)
        assert (ctx.source, ctx.checkpoint_at) == ("raw_checkpoint", 0)
        assert [json.loads(line)["index"] for line in ctx.content.splitlines()] == [9]


def _open_twice(s: Session) -> None:
    s.open_call("c", "tool_call", "a")
    s.open_call("c", "tool_call", "a")


def _compact_both_ways(s: Session) -> None:
    s.open_call("c", "tool_call", "a")
    _compact(s, resolved_ids=["c"], unresolved_ids=["c"])


BAD: list[tuple[str, Callable[[Session], object]]] = [
    ("unknown call", lambda s: s.resolve_call("ghost", "ok")),
    ("unknown constraint", lambda s: s.lift_constraint("ghost")),
    ("range outside the log", lambda s: s.truncate(5, 11)),
    ("empty range", lambda s: s.truncate(5, 5)),
    ("spill outside the log", lambda s: s.spill(0, 12)),
    ("marker on unknown node", lambda s: s.emit_marker("n999")),
    ("resume of unknown marker", lambda s: s.resume("m999")),
    ("compaction replacing unknown node", lambda s: _compact(s, replaces=["n999"])),
    ("compaction naming unknown call", lambda s: _compact(s, resolved_ids=["ghost"])),
    ("compaction claiming a call both ways", lambda s: _compact_both_ways(s)),
    ("compaction outside the log", lambda s: _compact(s, covers=(0, 11), tail_start=11)),
    ("tier 3", lambda s: _compact(s, tier=3)),
    ("negative tokens", lambda s: _compact(s, tokens=-1)),
    ("bad disposition", lambda s: s.dispose("x", "forgotten", "")),
    ("call opened twice", lambda s: _open_twice(s)),
    ("empty spill", lambda s: s.spill(2, 2)),
    ("compaction carrying an unknown constraint", lambda s: _compact(s, constraints=["nope"])),
]


class TestBadInput:
    @pytest.mark.parametrize(("what", "call"), BAD, ids=[b[0] for b in BAD])
    def test_invalid_event_writes_nothing(
        self, target: Target, s: Session, what: str, call: Callable[[Session], object]
    ) -> None:
        """Bad input is InvalidEvent and the events table is unchanged."""
        before = target.rows()
        with pytest.raises(eventstore.InvalidEvent):
            call(s)
        after = target.rows()
        assert after[: len(before)] == before
        assert len(after) - len(before) <= 1  # only the cases that open a call first commit it

    def test_token_ranges_must_be_on_boundaries(self, journal: eventstore.Journal) -> None:
        """In a token session a range inside a turn is rejected."""
        s = new_session(journal, "tok", truncator_unit="tokens", floor_unit="tokens")
        fill(s, 3, tokens=10)
        with pytest.raises(eventstore.InvalidEvent, match="not a turn boundary"):
            s.truncate(0, 15)
        s.truncate(0, 20)
        assert s.state.truncated == ((0, 20),)

    def test_duplicate_and_bad_session_ids(self, journal: eventstore.Journal) -> None:
        """A taken id, an id with a slash, and an unknown id are InvalidEvent."""
        new_session(journal, "dup")
        with pytest.raises(eventstore.InvalidEvent, match="already exists"):
            new_session(journal, "dup")
        with pytest.raises(eventstore.InvalidEvent, match="session id"):
            new_session(journal, "../escape")
        with pytest.raises(eventstore.InvalidEvent, match="no session"):
            journal.session("ghost")


class TestChainBreaks:
    """Readers report a chain break they walk over; a writer never appends onto one."""

    def _edit(self, target: Target, version: int) -> None:
        behind(
            target,
            [("UPDATE events SET recorded_at = ? WHERE session_id = ? AND version = ?",
              ("2020-01-01T00:00:00.000000+00:00", "s", version))],
        )  # fmt: skip

    def test_events_stop_at_the_break_with_its_version(self, target: Target) -> None:
        """events() yields the rows before the break, then IntegrityError naming it."""
        with eventstore.open(target.location, snapshot_every=0) as journal:
            fill(new_session(journal), 6)
            self._edit(target, 4)
            s = journal.session("s")
            seen: list[object] = []
            with pytest.raises(eventstore.IntegrityError, match=r"breaks at v4 \(hash does not"):
                seen.extend(s.events())
            assert len(seen) == 3
            assert s.state_at(3).version == 3  # before the break: still readable
            with pytest.raises(eventstore.IntegrityError, match="v4"):
                s.state_at(5)
            assert list(s.events(start=5)) == list(s.events(start=5, stop=7))  # after it, too

    def test_a_writer_does_not_append_onto_a_broken_chain(self, target: Target) -> None:
        """A session reopened over a broken chain refuses to commit; nothing is written."""
        with eventstore.open(target.location, snapshot_every=0) as journal:
            fill(new_session(journal), 6)
            self._edit(target, 4)
            before = target.rows()
            with pytest.raises(eventstore.IntegrityError, match="breaks at v4"):
                journal.session("s").append_turn("user", "on top", 1)
            assert target.rows() == before

    def test_a_live_writer_sees_its_head_replaced(self, target: Target) -> None:
        """The row a live session wrote last, edited and its hash forged behind its
        back: the next commit is refused, naming that version."""
        with eventstore.open(target.location) as journal:
            s = new_session(journal)
            fill(s, 3)
            self._edit(target, 4)
            forge_chain(target)
            with pytest.raises(eventstore.IntegrityError, match="breaks at v4"):
                s.append_turn("user", "on top", 1)
        assert len(target.rows()) == 4

    def test_read_spill_of_none_is_invalid_argument(self, s: Session) -> None:
        """read_spill(None) is InvalidArgument (a ValueError), not an AttributeError."""
        with pytest.raises(eventstore.InvalidArgument, match="a Spill or its handle"):
            s.read_spill(None)  # type: ignore[arg-type]

    def test_a_constraint_a_node_carries_may_be_carried_again(self, s: Session) -> None:
        """Known keys are the pending ones and those a node carries (a lifted one too)."""
        s.state_constraint("k", "keep it")
        _compact(s, constraints=["k"])
        s.lift_constraint("k")
        fill(s, 2)
        end = s.state.end
        node = s.compact(tier=2, input=(0, end), covers=(0, end), tail_start=end,
                         summary="again", tokens=1, constraints=["k"])  # fmt: skip
        assert node.constraints == ("k",)


class TestSnapshots:
    def test_incremental_chunks_rebuild_the_state(
        self, target: Target, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With tiny chunks, many incremental snapshots still reopen to the replayed state."""
        monkeypatch.setattr("eventstore._store._snapshots.CHUNK", 3)
        with target.open(snapshot_every=4) as journal:
            s = new_session(journal, "snap")
            for i in range(40):
                s.append_turn("user", f"t{i}", i)
                if i % 7 == 6:
                    s.open_call(f"c{i}", "tool_call", "x")
                    s.truncate(0, i // 2, "budget")
                    s.checkpoint()
            live = s.state
        chunks = target.rows("SELECT count(*) FROM snapshot_chunks WHERE ledger = 'tok_starts'")
        assert chunks[0][0] > 5
        with target.open() as journal:
            reopened = journal.session("snap")
            cold = reducers.fold(reopened.events())
            assert reopened.state.sha256 == live.sha256 == cold.sha256

    def test_unreadable_snapshot_falls_back_to_replay(self, target: Target) -> None:
        """A corrupt snapshot is a cache miss, not an error: the log is replayed."""
        with target.open(snapshot_every=2) as journal:
            s = new_session(journal, "snap")
            fill(s, 5)
            expected = s.state.sha256
        blob = {"sqlite": "x'00ff'", "postgres": "'\\x00ff'::bytea"}[target.backend]
        target.tamper(f"UPDATE snapshots SET state = {blob}")
        with target.open() as journal:
            assert journal.session("snap").state.sha256 == expected

    def test_call_ids_with_escapes_across_chunks_are_trusted(
        self, target: Target, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Call ids holding newlines and backslashes, stored as lines over several
        chunks, reopen to a trusted snapshot with the replay's sha256."""
        monkeypatch.setattr("eventstore._store._snapshots.CHUNK", 3)
        ids = ["a", "b\nc", "d\\", "\\n", "e", "f\n", "g", "\\\\h"]
        with target.open(snapshot_every=2) as journal:
            s = new_session(journal, "snap")
            for call_id in ids:
                s.open_call(call_id, "tool_call", "x")
            fill(s, 2)
            live = s.state
        with target.open() as journal:
            checked = journal.snapshots.check("snap")
            assert checked is not None
            assert checked.state is not None
            assert list(checked.state.call_ids) == ids
            reopened = journal.session("snap")
            assert reopened.state.sha256 == live.sha256 == reducers.fold(reopened.events()).sha256


class TestJunkInput:
    @pytest.mark.parametrize(
        ("what", "call"),
        [
            ("lone surrogate", lambda s: s.append_turn("user", "\ud800", 1)),
            ("surrogate key", lambda s: s.state_constraint("k\udfff", "x")),
            ("tokens 2**63", lambda s: s.append_turn("user", "x", 2**63)),
            ("tokens summing past 2**63", lambda s: [s.append_turn("u", "x", 2**62) for _ in "ab"]),
            ("range 2**64", lambda s: s.truncate(0, 2**64)),
            ("input None", lambda s: _compact(s, input=None)),
            ("input 1-tuple", lambda s: _compact(s, input=(1,))),
            ("covers a string", lambda s: _compact(s, covers="ab")),
            ("state_at None", lambda s: s.state_at(None)),
            ("events from 2**70", lambda s: list(s.events(start=2**70))),
            ("extend None", lambda s: s.extend(None)),
            ("marker on a list", lambda s: s.emit_marker([])),
            ("resume a dict", lambda s: s.resume({})),
            ("expected_version 'x'", lambda s: s.checkpoint(expected_version="x")),
        ],
    )
    def test_is_invalid_event_and_writes_nothing(
        self, target: Target, s: Session, what: str, call: Callable[[Session], object]
    ) -> None:
        """The issue's junk raises InvalidEvent (not TypeError & co.) and writes nothing."""
        before = target.rows()
        with pytest.raises(eventstore.InvalidEvent):
            call(s)
        assert target.rows()[: len(before)] == before
        assert len(target.rows()) - len(before) <= 1  # the valid first 2**62 turn commits

    @pytest.mark.parametrize("path", [None, 3, b"x.db", "a\x00b"])
    def test_open_junk_is_a_journal_error(self, path: object) -> None:
        """eventstore.open of a non-path is a JournalError."""
        with pytest.raises(eventstore.JournalError):
            eventstore.open(path)  # type: ignore[arg-type]

    @given(calls=st.lists(strategies.api_calls(), min_size=1, max_size=8))
    def test_every_method_survives_junk(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        """Junk to any Session method gives a result or a JournalError; a rejected call
        writes no event and leaves no spill file."""
        with tempfile.TemporaryDirectory() as tmp, eventstore.open(Path(tmp) / "j.db") as j:
            s = new_session(j, on_unsafe="spill")
            fill(s, 4)
            for method, kwargs in calls:
                before = s.version
                try:
                    result = getattr(s, method)(**kwargs)
                    if method == "events":
                        list(result)
                except (eventstore.UnrecoverableCompactionError, eventstore.MarkerInvalid):
                    continue  # refusals are recorded: that is their point
                except eventstore.JournalError:
                    assert s.version == before, f"{method} wrote despite its error"
            assert j.spills.orphans(j.recorder.spill_handles()) == []


class TestWithdrawals:
    def test_retract_and_clear_append_and_keep_the_turns(self, s: Session) -> None:
        """Both commands append one event each; every turn is still read back."""
        before = s.state
        s.retract_turn(9, "pop_item")
        s.clear_context("clear_session")
        after = s.state
        assert after.version == before.version + 2
        assert after.withdrawn == ((0, 10),)
        assert after.occupancy == 0
        assert len(s.turns()) == 10
        assert [type(e).__name__ for e in s.events()][-2:] == ["TurnRetracted", "ContextCleared"]

    def test_bad_retraction_writes_nothing(self, s: Session) -> None:
        """Retracting a turn twice is InvalidEvent and leaves the version alone."""
        s.retract_turn(3)
        version = s.version
        with pytest.raises(eventstore.InvalidEvent):
            s.retract_turn(3)
        assert s.version == version

    def test_verify_and_import_re_derive_them(
        self, db_path: Path, s: Session, journal: eventstore.Journal
    ) -> None:
        """A session with withdrawals verifies, and imports to the same sha256."""
        from eventstore._ops import _audit, _transfer

        s.retract_turn(9)
        s.clear_context()
        s.append_turn("user", "again", 3)
        assert _audit.verify(journal) == []
        dump = db_path.with_name("dump.jsonl")
        dump.write_text("".join(line + "\n" for line in _transfer.export_lines(journal, "s")))
        with eventstore.open(db_path.with_name("copy.db")) as copy, dump.open() as f:
            _transfer.import_file(copy, f)
            assert copy.session("s").state.sha256 == s.state.sha256


class TestWithdrawalsAndMarkers:
    def test_retracting_the_turn_that_holds_an_obligation_invalidates(
        self, s: Session, journal: eventstore.Journal
    ) -> None:
        """A marker relying on a resident turn for a constraint is invalidated by its retraction."""
        from eventstore._ops import _audit

        node = _compact(s)
        s.append_turn("user", "never modify /etc", 4)
        s.state_constraint("no-etc", "never modify /etc")
        marker = s.emit_marker(node.node_id)
        s.retract_turn(10, "pop_item")
        types = [type(e).__name__ for e in s.events()]
        assert types[-2:] == ["TurnRetracted", "MarkerInvalidated"]
        assert not s.state.markers[marker.marker_id].valid
        assert "withdrawn" in str(s.state.markers[marker.marker_id].invalidated_reason)
        assert s.resume(marker.marker_id).source == "raw_checkpoint"
        assert _audit.verify(journal) == []

    def test_clear_invalidates_markers_on_the_summaries_it_takes(
        self, s: Session, journal: eventstore.Journal
    ) -> None:
        """After a clear no live summary frames the session: its markers fail M3."""
        from eventstore._ops import _audit

        node = _compact(s)
        marker = s.emit_marker(node.node_id)
        s.clear_context("clear_session")
        m = s.state.markers[marker.marker_id]
        assert (m.valid, m.invalidated_rule) == (False, "M3")
        assert "cleared from the context" in str(m.invalidated_reason)
        assert _audit.verify(journal) == []


class TestMarkerGate:
    def test_gate_refuses_what_a_marker_would_refuse(
        self, db_path: Path, s: Session, journal: eventstore.Journal
    ) -> None:
        """With require_marker an uncarried open call is refused as M1, recorded, re-derived."""
        from eventstore._ops import _audit

        s.open_call("c1", "tool_call", "grep")
        s.append_turn("tool", "later", 1)
        before = s.state
        span: dict[str, Any] = {"input": (0, 11), "covers": (0, 11), "tail_start": 11}
        with pytest.raises(eventstore.UnrecoverableCompactionError) as refused:
            _compact(s, require_marker=True, **span)
        assert [v.rule for v in refused.value.violations] == ["M1"]
        assert "'c1'" in refused.value.violations[0].message
        after = s.state
        assert (after.nodes, after.occupancy) == (before.nodes, before.occupancy)
        assert _audit.verify(journal) == []
        node = _compact(s, require_marker=True, unresolved_ids=["c1"], **span)
        assert node.live
        assert _audit.verify(journal) == []

    def test_without_the_gate_the_same_summary_commits(self, s: Session) -> None:
        """The gate is opt-in: a plain compaction of the same summary commits (0.1 behaviour)."""
        s.open_call("c1", "tool_call", "grep")
        s.append_turn("tool", "later", 1)
        assert _compact(s, input=(0, 11), covers=(0, 11), tail_start=11).live
