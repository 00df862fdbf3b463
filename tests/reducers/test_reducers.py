"""The pure fold: positions, occupancy, persistence without copying."""

from __future__ import annotations

import hashlib
from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reducers as r
from reducers._fold import _HANDLERS, _Acc

START = r.SessionStarted(
    window_tokens=1_000,
    trigger_tokens=800,
    truncator_unit="tokens",
    floor_span=20,
    floor_unit="tokens",
    on_unsafe="halt",
)


def _turns(*tokens: int) -> list[r.Event]:
    return [r.TurnAppended(index=i, role="u", content="", tokens=t) for i, t in enumerate(tokens)]


class TestPositions:
    def test_token_positions_are_turn_starts(self) -> None:
        """In a token session a turn's position is its first token."""
        s = r.fold([START, *_turns(5, 7, 11)])
        assert [s.position_of_turn(i) for i in range(3)] == [0, 5, 12]
        assert (s.end, s.last_position, s.turn_index(12)) == (23, 12, 2)
        assert s.on_boundary(12)
        assert not s.on_boundary(13)
        assert not s.on_boundary(24)

    def test_obligation_position_is_the_last_turn_before_it(self) -> None:
        """0 before any turn, else the last turn's start."""
        s = r.fold(
            [
                START,
                r.ConstraintStated(key="a", text=""),
                *_turns(5, 7),
                r.ConstraintStated(key="b", text=""),
            ]
        )
        assert (s.constraints["a"].position, s.constraints["b"].position) == (0, 5)

    def test_occupancy_counts_live_summaries_and_resident_turns(self) -> None:
        """Truncated and summarised turns leave; live summaries count their own tokens."""
        node = r.Compacted(
            node_id="n",
            tier=1,
            input_lo=5,
            input_hi=12,
            covers_lo=5,
            covers_hi=12,
            tail_start=12,
            summary="",
            tokens=2,
        )
        s = r.fold([START, *_turns(5, 7, 11), r.Truncated(lo=0, hi=5, reason=""), node])
        assert s.occupancy == 11 + 2


class TestPersistence:
    def test_apply_leaves_the_input_state_alone(self) -> None:
        """apply() returns a new state; the old one keeps its turns and canonical form."""
        before = r.fold([START, *_turns(5)])
        frozen = r.canonical_json(before.to_json())
        after = r.apply(before, r.TurnAppended(index=1, role="u", content="", tokens=9))
        assert (before.turns, before.tokens_total) == (1, 5)
        assert r.canonical_json(before.to_json()) == frozen
        assert (after.turns, after.tokens_total) == (2, 14)

    def test_branches_do_not_see_each_other(self) -> None:
        """Two different events applied to one state give two independent states."""
        base = r.fold([START, *_turns(5)])
        a = r.apply(base, r.TurnAppended(index=1, role="u", content="", tokens=1))
        b = r.apply(base, r.TurnAppended(index=1, role="u", content="", tokens=2))
        a2 = r.apply(a, r.TurnAppended(index=2, role="u", content="", tokens=3))
        assert (a.tokens_total, b.tokens_total, a2.tokens_total, base.turns) == (6, 7, 9, 1)

    def test_mappings_are_read_only(self) -> None:
        """State mappings cannot be mutated by a caller."""
        s = r.fold([START, r.ConstraintStated(key="a", text="")])
        with pytest.raises(TypeError):
            s.constraints["b"] = s.constraints["a"]  # type: ignore[index]

    def test_not_an_event_is_invalid(self) -> None:
        """Folding something that is not an event is InvalidEvent."""
        with pytest.raises(r.InvalidEvent):
            r.apply(r.SessionState(), "TurnAppended")  # type: ignore[arg-type]

    def test_equal_histories_hash_equal(self) -> None:
        """The sha256 depends only on the events."""
        events = [START, *_turns(5, 7), r.Truncated(lo=0, hi=5, reason="x")]
        assert r.fold(events).sha256 == r.fold(events).sha256
        changed = [*events[:-1], r.Truncated(lo=0, hi=5, reason="y")]
        assert r.fold(changed).sha256 != r.fold(events).sha256


class TestLedger:
    def test_append_shares_the_tip_and_copies_on_branch(self) -> None:
        """Appending at the tip reuses the buffer; appending to an older view copies."""
        base = r.Ledger.of([1, 2])
        longer = base.append(3)
        branch = base.append(9)
        assert (list(base), list(longer), list(branch)) == ([1, 2], [1, 2, 3], [1, 2, 9])

    def test_writer_claim_is_exclusive(self) -> None:
        """A second writer on a claimed tip gets its own copy."""
        base = r.Ledger.of([1])
        first, second = base.writer(), base.writer()
        first.append(2)
        second.append(3)
        assert (list(first.close()), list(second.close()), list(base)) == ([1, 2], [1, 3], [1])

    def test_abort_restores_the_tip(self) -> None:
        """An aborted writer leaves the buffer as it was, index included."""
        base = r.Ledger.of(["a"], indexed=True)
        writer = base.writer()
        writer.append("b")
        writer.abort()
        after = base.append("c")
        assert "b" not in after
        assert list(after) == ["a", "c"]

    @pytest.mark.parametrize(
        "cut",
        [slice(-3, None), slice(1, 3), slice(None, None, -1), slice(5, 1, -2), slice(9, 99)],
    )
    def test_a_slice_is_the_list_a_list_would_give(self, cut: slice) -> None:
        """``state.spills[-3:]`` and the like: the visible items only (not what a longer
        view sharing the buffer appended), on object and integer ledgers alike."""
        items = [10, 11, 12, 13, 14, 15]
        base = r.Ledger.of(list(items))
        base.append(99)  # shares the buffer: not part of base
        assert base[cut] == items[cut]
        assert r.Ledger.of_ints(array("q", items))[cut] == items[cut]

    def test_failed_fold_leaves_the_state_appendable(self) -> None:
        """A fold that raises half-way does not leave its appends in shared buffers."""
        base = r.fold([START, *_turns(5)])

        def boom(state: r.SessionState, event: r.Event) -> None:
            if state.turns == 2:
                raise r.InvalidEvent("stop")

        with pytest.raises(r.InvalidEvent):
            r.fold(_turns(5, 5, 5)[1:], base, check=boom)
        after = r.apply(base, r.TurnAppended(index=1, role="u", content="", tokens=1))
        assert (after.turns, after.tokens_total, base.turns) == (2, 6, 1)


# A session written with every 0.1 event kind, and its sha256 as tierlog 0.1 computed it
# (commit 7079028). The events added since must not change the hash of such a session.
_V01 = r.SessionStarted(
    window_tokens=1000,
    trigger_tokens=800,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="spill",
)
_V01_EVENTS: list[r.Event] = [
    _V01,
    *[r.TurnAppended(index=i, role="user", content=f"t{i}", tokens=10 + i) for i in range(4)],
    r.CallOpened(call_id="c1", kind="tool_call", name="grep"),
    r.ConstraintStated(key="k", text="no /etc"),
    r.ItemDisposed(key="d", disposition="rejected", reason="no"),
    r.TurnAppended(index=4, role="tool", content="x", tokens=5),
    r.Truncated(lo=0, hi=1, reason="b"),
    r.Checkpointed(at=5),
    r.Compacted(
        node_id="n12",
        tier=1,
        input_lo=0,
        input_hi=4,
        covers_lo=0,
        covers_hi=4,
        tail_start=4,
        summary="s",
        tokens=3,
        dispositions={"d": "rejected"},
        unresolved_ids=["c1"],
        constraints=["k"],
    ),
    r.MarkerEmitted(marker_id="m13", node_id="n12", tier_depth=1, resolved_ids=()),
    r.CallResolved(call_id="c1", outcome="ok"),
]
_V01_SHA256 = "1aff8070ca39913232e55bf805a910327f7804e172dfcf9531d35ac1e2eb7b96"


class TestWithdrawals:
    def test_sessions_without_them_hash_as_in_0_1(self) -> None:
        """A state that never saw TurnRetracted/ContextCleared keeps its 0.1 sha256."""
        state = r.fold(_V01_EVENTS)
        assert "withdrawn" not in state.to_json()
        assert state.sha256 == _V01_SHA256

    def test_retracted_turn_leaves_the_context_not_the_log(self) -> None:
        """A retraction lowers occupancy and is hashed; the turn is still counted."""
        base = r.fold([START, *_turns(5, 7, 11)])
        after = r.apply(base, r.TurnRetracted(index=1, reason="pop_item"))
        assert (after.turns, after.tokens_total) == (base.turns, base.tokens_total)
        assert (base.occupancy, after.occupancy) == (23, 16)
        assert after.evicted == ((5, 12),)
        assert after.to_json()["withdrawn"] == [[1, 2]]
        assert after.sha256 != base.sha256

    def test_clear_takes_turns_and_live_summaries_but_not_obligations(self) -> None:
        """After a clear nothing is resident, nodes stop being live, obligations stay."""
        node = r.Compacted(
            node_id="n",
            tier=1,
            input_lo=0,
            input_hi=5,
            covers_lo=0,
            covers_hi=5,
            tail_start=5,
            summary="x",
            tokens=2,
        )
        events = [START, *_turns(5, 7), r.CallOpened(call_id="c", kind="tool_call", name="")]
        state = r.fold([*events, node, r.ContextCleared(before=2, reason="clear_session")])
        assert (state.occupancy, state.depth, state.tail_start) == (0, 0, 0)
        assert not state.nodes["n"].live
        assert state.nodes["n"].replaced_by is None
        assert list(state.open_calls) == ["c"]
        grown = r.apply(state, r.TurnAppended(index=2, role="u", content="", tokens=4))
        assert grown.occupancy == 4


def _plain_run(codes: list[int]) -> list[r.Event]:
    """Valid plain events from op codes: turns, calls opened and resolved, constraints."""
    out: list[r.Event] = []
    turns, opened = 0, 0
    open_now: list[str] = []
    pending: list[str] = []
    for code in codes:
        kind = code % 6
        if kind == 0 or (kind == 2 and not open_now) or (kind == 4 and not pending):
            out.append(r.TurnAppended(index=turns, role="u", content="", tokens=code % 7))
            turns += 1
        elif kind == 1:
            out.append(r.CallOpened(call_id=f"c{opened}", kind="tool_call", name="g"))
            open_now.append(f"c{opened}")
            opened += 1
        elif kind == 2:
            out.append(r.CallResolved(call_id=open_now.pop(code % len(open_now)), outcome="ok"))
        elif kind == 3:
            out.append(r.ConstraintStated(key=f"k{code % 5}", text=str(code)))
            pending.append(f"k{code % 5}")
        elif kind == 4:
            out.append(r.ConstraintLifted(key=pending.pop()))
            pending = [k for k in pending if k != out[-1].key]  # type: ignore[union-attr]
        else:
            out.append(r.ItemDisposed(key=f"d{code % 3}", disposition="rejected", reason=""))
    return out


class TestFastPaths:
    @given(st.lists(st.integers(0, 60), max_size=40), st.integers(0, 9))
    def test_apply_of_a_turn_is_the_fold_of_it(self, codes: list[int], tokens: int) -> None:
        """apply()'s turn path gives the state the accumulator's turn handler gives."""
        state = r.fold([START, *_plain_run(codes)])
        turn = r.TurnAppended(index=state.turns, role="u", content="x", tokens=tokens)
        acc = _Acc(state)
        _HANDLERS[r.TurnAppended](acc, turn)
        acc.version += 1
        slow = acc.freeze()
        fast = r.apply(state, turn)
        assert fast == slow
        assert fast.sha256 == slow.sha256
        assert r.fold([START, *_plain_run(codes), turn]) == fast

    @given(st.lists(st.integers(0, 60), max_size=60))
    def test_states_a_check_saw_never_change(self, codes: list[int]) -> None:
        """A checked fold hands the check a state before each event; every one of them
        still reads as it did when the fold is over, and the result is the plain fold's."""
        events = _plain_run(codes)
        seen: list[tuple[r.SessionState, bytes]] = []

        def check(before: r.SessionState, _: r.Event) -> None:
            seen.append((before, r.canonical_json(before.to_json())))

        start = r.fold([START])
        after = r.fold(events, start, check=check)
        assert after == r.fold(events, start)
        assert [r.canonical_json(s.to_json()) for s, _ in seen] == [j for _, j in seen]
        assert [s.version for s, _ in seen] == list(range(1, len(events) + 1))

    def test_a_refused_event_leaves_the_state_it_started_from(self) -> None:
        """A check that stops the fold midway leaves the input state (and what a later
        fold from it sees) as it was."""
        events = _plain_run(list(range(1, 40)))
        base = r.fold([START, *events[:10]])
        frozen = r.canonical_json(base.to_json())

        def stop(before: r.SessionState, _: r.Event) -> None:
            if before.version > 25:
                raise r.InvalidEvent("stop")

        with pytest.raises(r.InvalidEvent):
            r.fold(events[10:], base, check=stop)
        assert r.canonical_json(base.to_json()) == frozen
        assert r.fold(events[10:], base) == r.fold([START, *events])

    def test_the_open_call_a_fold_records_is_the_one_the_class_builds(self) -> None:
        """The fold builds a call's ``OpenCall`` without its keyword handling: equal,
        with the same hash and text, to ``OpenCall(...)`` of the same values."""
        opened = r.CallOpened(call_id="c", kind="tool_call", name="grep")
        state = r.fold([START, *_turns(5, 7), opened])
        built = r.OpenCall(call_id="c", kind="tool_call", name="grep", position=5, version=4)
        call = state.open_calls["c"]
        assert (call, hash(call), repr(call)) == (built, hash(built), repr(built))

    def test_a_keyed_check_that_refuses_leaves_the_state_it_started_from(self) -> None:
        """A keyed check that stops the fold midway (no state frozen before it) leaves
        the input state, and a later fold from it, as they were."""
        events = _plain_run(list(range(1, 40)))
        base = r.fold([START, *events[:10]])
        frozen = r.canonical_json(base.to_json())

        def stop(call_ids: object, open_calls: object, constraints: object, e: r.Event) -> None:
            if isinstance(e, r.CallResolved):
                raise r.InvalidEvent("stop")

        keyed = {r.CallOpened: lambda *_: None, r.CallResolved: stop}
        assert any(isinstance(e, r.CallResolved) for e in events[10:])
        with pytest.raises(r.InvalidEvent):
            r.fold(events[10:], base, check=lambda *_: None, keyed_check=keyed)
        assert r.canonical_json(base.to_json()) == frozen
        assert r.fold(events[10:], base) == r.fold([START, *events])


class TestLedgerPusher:
    def test_pushed_items_count_after_sync(self) -> None:
        """Raw appends through pusher() are seen once synced; an older view never sees them."""
        base = r.Ledger.of([1, 2])
        writer = base.writer()
        push = writer.pusher()
        push(3)
        push(4)
        writer.sync()
        assert (list(writer.close()), list(base)) == ([1, 2, 3, 4], [1, 2])

    def test_indexed_ledgers_refuse_raw_appends(self) -> None:
        """An indexed ledger's index must follow each append: no pusher."""
        with pytest.raises(TypeError):
            r.Ledger.of(["a"], indexed=True).writer().pusher()


class TestDeferredLedger:
    def test_items_are_made_once_when_first_read(self) -> None:
        """A deferred ledger knows its length without its items; the first read makes
        them once, and it then reads, indexes and appends like any ledger."""
        calls: list[int] = []

        def load() -> list[str]:
            calls.append(1)
            return ["a", "b", "a"]

        base = r.Ledger.deferred(3, load, indexed=True)
        assert (len(base), calls) == (3, [])
        longer = base.append("c")
        assert ["b" in base, "c" in base, "c" in longer, base[2]] == [True, False, True, "a"]
        assert (list(base), list(longer), calls) == (["a", "b", "a"], ["a", "b", "a", "c"], [1])

    def test_a_writer_on_an_unread_ledger_appends_after_its_items(self) -> None:
        """A writer claimed before anything was read sees the loaded items first."""
        base = r.Ledger.deferred(2, lambda: ["x", "y"], indexed=True)
        writer = base.writer()
        writer.append("z")
        after = writer.close()
        assert (list(after), "z" in after, "z" in base) == (["x", "y", "z"], True, False)


class TestLedgerReadPaths:
    def test_membership_holds_whenever_the_index_is_built(self) -> None:
        """An indexed ledger answers ``in`` by its first position, whether its index was
        built before appends (by a writer's claim) or after them (by a first lookup)."""
        for look_first in (True, False):
            base = r.Ledger.of(["a", "b", "a"], indexed=True)
            if look_first:
                assert "b" in base
            longer = base.append("c").append("b")
            writer = longer.writer()
            writer.append("d")
            after = writer.close()
            assert ["c" in base, "c" in longer, "d" in longer, "d" in after] == [
                False, True, False, True,
            ]  # fmt: skip
            assert "z" not in after
            assert "a" in after

    @given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50), st.integers(0, 50))
    def test_int_sha256_is_the_hash_of_int_bytes(self, items: list[int], cut: int) -> None:
        """For a whole buffer, a prefix view and a buffer a writer holds, ``int_sha256``
        is ``sha256(int_bytes())``, and the buffer still takes appends afterwards."""
        whole = r.Ledger.of_ints(array("q", items))
        prefix = r.Ledger.of_ints(array("q", items)).writer().close()
        prefix = r.Ledger(prefix._buf, min(cut, len(items)))
        held = r.Ledger.of_ints(array("q", items))
        writer = held.writer()
        for ledger in (whole, prefix, held):
            assert ledger.int_sha256() == hashlib.sha256(ledger.int_bytes()).hexdigest()
        writer.append(7)  # no view of the buffer is left exported
        assert list(whole.append(1)) == [*items, 1]
