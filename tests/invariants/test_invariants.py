"""C1-C5 and M1-M3, each violated alone, plus the passing case. Pure: no database."""

from __future__ import annotations

import pickle
from typing import Any

import attrs
import pytest

import invariants
import reducers as r

BASE = r.SessionStarted(
    window_tokens=10_000,
    trigger_tokens=8_000,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="halt",
)


def turns(n: int, start: int = 0) -> list[r.Event]:
    return [r.TurnAppended(index=i, role="u", content=f"t{i}", tokens=10) for i in range(start, n)]


def state(*events: r.Event, config: r.SessionStarted = BASE) -> r.SessionState:
    return r.fold([config, *events])


def proposal(**changes: Any) -> r.Compacted:
    """Safe on a 10-turn session: input and covers [0, 8), tail at 8 (floor [6, 8))."""
    base = r.Compacted(
        node_id="p",
        tier=1,
        input_lo=0,
        input_hi=8,
        covers_lo=0,
        covers_hi=8,
        tail_start=8,
        summary="s",
        tokens=5,
    )
    return attrs.evolve(base, **changes)


def rules(found: list[r.Violation]) -> list[str]:
    return [v.rule for v in found]


TEN = turns(10)


class TestCompaction:
    def test_safe_proposal_passes(self) -> None:
        """A proposal covering the floor with no eviction has no violation."""
        assert invariants.check_compaction(state(*TEN), proposal()) == []

    def test_c1_unit_mismatch(self) -> None:
        """A floor in turns under a token truncator is C1, and only C1."""
        s = state(*TEN, config=attrs.evolve(BASE, truncator_unit="tokens"))
        p = proposal(input_hi=80, covers_hi=80, tail_start=80)
        found = invariants.check_compaction(s, p)
        assert [(v.rule, v.name) for v in found] == [("C1", "unit_mismatch")]
        assert "2 turns" in found[0].message

    def test_c2_floor_not_covered(self) -> None:
        """Input starting inside the floor [6, 8) is C2, with the floor as its range."""
        found = invariants.check_compaction(state(*TEN), proposal(input_lo=7, covers_lo=7))
        assert [(v.rule, v.name, v.lo, v.hi) for v in found] == [("C2", "floor_not_covered", 6, 8)]

    def test_c2_input_ending_before_tail(self) -> None:
        """Input that stops short of the tail misses part of the floor."""
        found = invariants.check_compaction(state(*TEN), proposal(input_hi=7))
        assert rules(found) == ["C2"]

    def test_c3_truncation_in_floor_without_spill(self) -> None:
        """A truncation overlapping the floor is C3, naming the evicted overlap."""
        s = state(*TEN, r.Truncated(lo=5, hi=7, reason="budget"))
        found = invariants.check_compaction(s, proposal())
        assert [(v.rule, v.name, v.lo, v.hi) for v in found] == [("C3", "evidence_evicted", 6, 7)]

    def test_c3_excused_by_a_spill(self) -> None:
        """The same truncation passes when a (verified) spill covers it."""
        spill = r.Spilled(lo=5, hi=7, handle="f", sha256="0" * 64, bytes=1)
        s = state(*TEN, r.Truncated(lo=5, hi=7, reason="budget"), spill)
        assert invariants.check_compaction(s, proposal()) == []

    def test_c3_ignores_truncation_before_the_floor(self) -> None:
        """Evicting turns before the floor is not C3."""
        s = state(*TEN, r.Truncated(lo=0, hi=3, reason="budget"))
        assert invariants.check_compaction(s, proposal()) == []

    def test_c4_seam_hole(self) -> None:
        """covers_hi short of tail_start leaves the hole [covers_hi, tail_start)."""
        found = invariants.check_compaction(state(*TEN), proposal(covers_hi=7))
        assert [(v.rule, v.name, v.lo, v.hi) for v in found] == [("C4", "seam_hole", 7, 8)]

    @pytest.mark.parametrize(
        ("obligation", "carried"),
        [
            (r.ConstraintStated(key="no-etc", text="never /etc"), {"constraints": ["no-etc"]}),
            (r.CallOpened(call_id="c1", kind="tool_call", name="ls"), {"unresolved_ids": ["c1"]}),
            (r.CallOpened(call_id="c1", kind="subprocess", name="ls"), {"unresolved_ids": ["c1"]}),
            (
                r.ItemDisposed(key="plan-a", disposition="rejected", reason="user"),
                {"dispositions": {"plan-a": "rejected"}},
            ),
        ],
    )
    def test_c5_evicted_obligation(self, obligation: r.Event, carried: dict[str, Any]) -> None:
        """An obligation raised in a truncated range must be carried: C5 until it is."""
        s = state(*turns(2), obligation, *turns(10, 2), r.Truncated(lo=0, hi=3, reason="b"))
        found = invariants.check_compaction(s, proposal())
        assert [(v.rule, v.name, v.lo, v.hi) for v in found] == [("C5", "obligation_evicted", 0, 3)]
        assert invariants.check_compaction(s, proposal(**carried)) == []

    def test_c5_wrong_disposition_is_not_carried(self) -> None:
        """A negative fact carried with another disposition still violates C5."""
        fact = r.ItemDisposed(key="plan-a", disposition="rejected", reason="user")
        s = state(*turns(2), fact, *turns(10, 2), r.Truncated(lo=0, hi=3, reason="b"))
        found = invariants.check_compaction(s, proposal(dispositions={"plan-a": "superseded"}))
        assert rules(found) == ["C5"]

    def test_c5_carried_by_a_live_node(self) -> None:
        """A live node that carries the obligation excuses the proposal."""
        con = r.ConstraintStated(key="no-etc", text="never /etc")
        node = proposal(
            node_id="n0", covers_lo=0, covers_hi=2, tail_start=2, input_hi=2, constraints=["no-etc"]
        )
        s = state(*turns(2), con, *turns(10, 2), node, r.Truncated(lo=0, hi=3, reason="b"))
        assert invariants.check_compaction(s, proposal(covers_lo=2)) == []
        replacing = proposal(covers_lo=0, replaces=["n0"])
        assert rules(invariants.check_compaction(s, replacing)) == ["C5"]

    def test_c5_not_excused_by_a_spill(self) -> None:
        """A spill keeps the bytes, but the summarizer never saw them: C5 still applies."""
        con = r.ConstraintStated(key="no-etc", text="never /etc")
        spill = r.Spilled(lo=0, hi=3, handle="f", sha256="0" * 64, bytes=1)
        s = state(*turns(2), con, *turns(10, 2), r.Truncated(lo=0, hi=3, reason="b"), spill)
        assert rules(invariants.check_compaction(s, proposal())) == ["C5"]

    def test_every_violation_is_reported(self) -> None:
        """A proposal breaking C2, C3, C4 and C5 reports all four."""
        con = r.ConstraintStated(key="no-etc", text="never /etc")
        s = state(*turns(2), con, *turns(10, 2), r.Truncated(lo=0, hi=7, reason="b"))
        found = invariants.check_compaction(s, proposal(input_lo=7, covers_lo=6, covers_hi=7))
        assert sorted(set(rules(found))) == ["C2", "C3", "C4", "C5"]


def _node(**changes: Any) -> r.Compacted:
    return proposal(node_id="n", covers_hi=5, input_hi=5, tail_start=5, **changes)


class TestMarker:
    def test_complete_node_passes(self) -> None:
        """A node that carries every open call, constraint and negative fact it covers passes."""
        events = [
            *turns(2),
            r.CallOpened(call_id="c1", kind="tool_call", name="x"),
            r.ConstraintStated(key="k", text="t"),
            r.ItemDisposed(key="a", disposition="failed", reason="r"),
            *turns(10, 2),
            _node(unresolved_ids=["c1"], constraints=["k"], dispositions={"a": "failed"}),
        ]
        assert invariants.check_marker(state(*events), "n") == []

    def test_m1_open_call_not_closed(self) -> None:
        """A call open at commit and opened before covers_hi must be listed: M1."""
        s = state(
            *turns(2),
            r.CallOpened(call_id="c1", kind="tool_call", name="x"),
            *turns(10, 2),
            _node(),
        )
        found = invariants.check_marker(s, "n")
        assert [(v.rule, v.name) for v in found] == [("M1", "closure")]
        assert "'c1'" in found[0].message

    def test_m1_pending_constraint_not_carried(self) -> None:
        """A constraint pending at commit and raised before covers_hi must be carried: M1."""
        s = state(*turns(2), r.ConstraintStated(key="k", text="t"), *turns(10, 2), _node())
        assert rules(invariants.check_marker(s, "n")) == ["M1"]

    def test_m1_ignores_calls_resolved_before_commit(self) -> None:
        """A call resolved before the compaction is not an obligation of the node."""
        s = state(
            *turns(2),
            r.CallOpened(call_id="c1", kind="tool_call", name="x"),
            r.CallResolved(call_id="c1", outcome="ok"),
            *turns(10, 2),
            _node(),
        )
        assert invariants.check_marker(s, "n") == []

    @pytest.mark.parametrize("carried", [{}, {"a": "superseded"}])
    def test_m2_negative_fact_dropped(self, carried: dict[str, str]) -> None:
        """A disposition in the covered span must be kept with its disposition: M2."""
        s = state(
            *turns(2),
            r.ItemDisposed(key="a", disposition="rejected", reason="r"),
            *turns(10, 2),
            _node(dispositions=carried),
        )
        found = invariants.check_marker(s, "n")
        assert [(v.rule, v.name, v.lo, v.hi) for v in found] == [
            ("M2", "negative_fact_dropped", 0, 5)
        ]

    def test_m2_only_the_covered_span(self) -> None:
        """A negative fact after covers_hi is not the node's to carry."""
        s = state(
            *turns(7),
            r.ItemDisposed(key="a", disposition="rejected", reason="r"),
            *turns(10, 7),
            _node(),
        )
        assert invariants.check_marker(s, "n") == []

    def test_m3_depth_mismatch(self) -> None:
        """A marker on an L1 node while an L2 digest frames the session is M3."""
        l2 = proposal(node_id="d", tier=2, covers_lo=5, input_lo=0)
        s = state(*TEN, _node(), l2)
        found = invariants.check_marker(s, "n")
        assert [(v.rule, v.name) for v in found] == [("M3", "depth_mismatch")]
        assert invariants.check_marker(s, "d") == []

    def test_m3_replaced_node(self) -> None:
        """A marker on a node replaced by a same-tier re-compaction is M3."""
        again = proposal(node_id="n2", replaces=["n"])
        found = invariants.check_marker(state(*TEN, _node(), again), "n")
        assert rules(found) == ["M3"]
        assert "replaced by n2" in found[0].message

    def test_unknown_node_is_invalid_event(self) -> None:
        """A node id that never existed is bad input, not a violation."""
        with pytest.raises(r.InvalidEvent, match="unknown node"):
            invariants.check_marker(state(*TEN), "nope")

    def test_invalidations_after_depth_change(self) -> None:
        """An L2 re-compaction yields one MarkerInvalidated for the L1 marker it re-frames."""
        marker = r.MarkerEmitted(marker_id="m", node_id="n", tier_depth=1)
        before = state(*TEN, _node(), marker)
        assert invariants.invalidations(before) == []
        after = r.apply(before, proposal(node_id="d", tier=2, replaces=["n"]))
        (inv,) = invariants.invalidations(after)
        assert (inv.marker_id, inv.rule) == ("m", "M3")


class TestValidate:
    @pytest.mark.parametrize(
        "event",
        [
            r.Truncated(lo=0, hi=11, reason=""),
            r.CallResolved(call_id="ghost", outcome=""),
            r.ConstraintLifted(key="ghost"),
            r.TurnAppended(index=3, role="u", content="", tokens=1),
            r.MarkerEmitted(marker_id="m", node_id="ghost", tier_depth=1),
            r.Resumed(marker_id="ghost", source="digest", context_sha256="x", reason=""),
            proposal(replaces=["ghost"]),
            proposal(resolved_ids=["ghost"]),
        ],
    )
    def test_impossible_event_is_invalid(self, event: r.Event) -> None:
        """Events that cannot follow the state are InvalidEvent."""
        with pytest.raises(r.InvalidEvent):
            invariants.validate(state(*TEN), event)

    def test_a_call_both_resolved_and_unresolved_is_invalid(self) -> None:
        """A proposal (or its refusal) cannot claim one call both ways."""
        s = state(*TEN, r.CallOpened(call_id="c", kind="tool_call", name="f"))
        invariants.validate(s, proposal(unresolved_ids=["c"]))
        both = proposal(resolved_ids=["c"], unresolved_ids=["c"])
        for event in (both, r.CompactionRefused(proposal=both, violations=(), action="halted")):
            with pytest.raises(r.InvalidEvent, match="both resolved and unresolved"):
                invariants.validate(s, event)

    def test_token_ranges_must_fall_on_turn_boundaries(self) -> None:
        """In a token session, 15 is inside turn 1 (tokens [10, 20)): not a boundary."""
        s = state(*TEN, config=attrs.evolve(BASE, truncator_unit="tokens"))
        invariants.validate(s, r.Truncated(lo=10, hi=20, reason=""))
        with pytest.raises(r.InvalidEvent, match="not a turn boundary"):
            invariants.validate(s, r.Truncated(lo=10, hi=15, reason=""))

    def test_events_before_session_start_are_invalid(self) -> None:
        """Nothing but SessionStarted can open a session."""
        with pytest.raises(r.InvalidEvent, match="before SessionStarted"):
            invariants.validate(r.SessionState(), TEN[0])


class TestWithdrawalInput:
    def test_retraction_needs_a_turn_still_in_the_context(self) -> None:
        """A turn past the log, or one already retracted, cannot be retracted."""
        s = state(*turns(3), r.TurnRetracted(index=1, reason=""))
        invariants.validate(s, r.TurnRetracted(index=2, reason=""))
        for index in (1, 3):
            with pytest.raises(r.InvalidEvent):
                invariants.validate(s, r.TurnRetracted(index=index, reason=""))

    def test_clear_names_the_turn_count(self) -> None:
        """ContextCleared.before is the turn count at the clear, nothing else."""
        s = state(*turns(3))
        invariants.validate(s, r.ContextCleared(before=3, reason=""))
        with pytest.raises(r.InvalidEvent, match="turn count 3"):
            invariants.validate(s, r.ContextCleared(before=2, reason=""))


class TestRefusalsCrossProcesses:
    VIOLATIONS = (
        r.Violation(rule="C5", name="obligation_evicted", message="constraint etc", lo=0, hi=4),
        r.Violation(rule="M1", name="false_closure", message="grep-1 still open"),
    )
    SPILLED = r.Spilled(lo=0, hi=4, handle="spill-1", sha256="a" * 64, bytes=10)

    @pytest.mark.parametrize(
        "refusal",
        [
            invariants.UnrecoverableCompactionError(VIOLATIONS, action="spilled"),
            invariants.UnrecoverableCompactionError(VIOLATIONS),
            invariants.MarkerInvalid(VIOLATIONS, marker_id="m7", spilled=SPILLED),
            invariants.MarkerInvalid(VIOLATIONS),
        ],
        ids=["compaction-spilled", "compaction-halted", "marker-spilled", "marker"],
    )
    def test_a_refusal_pickles_with_its_message_and_fields(self, refusal: Exception) -> None:
        """A refusal sent to another process (``verify --jobs``, a worker pool) says the
        same and keeps its fields (it came back as "halted (191 violation(s))": its
        message taken for the violations)."""
        back = pickle.loads(pickle.dumps(refusal))
        assert (type(back), str(back)) == (type(refusal), str(refusal))
        assert vars(back) == vars(refusal)
