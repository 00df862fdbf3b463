"""A valid marker's digest context holds every live obligation (issue 16).

Each road by which an obligation used to fall out of a trusted digest, for an
open call, a pending constraint and a rejected approach: the check refuses the
marker or invalidates it in the transaction of the event that broke it, and
resume falls back to a raw context that holds the obligation.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eventstore
import invariants
import reducers
import reducers as r
from eventstore import Session
from eventstore._commands import Record
from eventstore._markers import context_for
from eventstore._ops._audit import verify
from eventstore._ops._replay import divergences
from tests.helpers import config, fill, rows

Raise = Callable[[Session], None]
_runs = itertools.count()

# One way of raising each kind of obligation, and the key it is known by.
RAISERS: dict[str, tuple[Raise, str]] = {
    "open call": (lambda s: s.open_call("grep-1", "tool_call", "grep -r TODO"), "grep-1"),
    "constraint": (lambda s: s.state_constraint("no-etc", "never modify /etc"), "no-etc"),
    "rejected approach": (
        lambda s: s.dispose("add-column-then-backfill", "rejected", "the user said no"),
        "add-column-then-backfill",
    ),
}
KINDS = sorted(RAISERS)


def _rule(kind: str) -> str:
    return "M2" if kind == "rejected approach" else "M1"


def _compact(s: Session, lo: int, hi: int, **changes: Any) -> eventstore.Node:
    args: dict[str, Any] = {
        "tier": 1,
        "input": (0, hi),
        "covers": (lo, hi),
        "tail_start": hi,
        "summary": f"summary of [{lo}, {hi})",
        "tokens": 3,
    }
    return s.compact(**{**args, **changes})


def _lines(ctx: eventstore.Context) -> list[dict[str, Any]]:
    return [json.loads(line) for line in ctx.content.splitlines()]


def _invalidations(s: Session) -> list[eventstore.MarkerInvalidated]:
    return [e for e in s.events() if isinstance(e, eventstore.MarkerInvalidated)]


@pytest.fixture(name="s")
def _s(journal: eventstore.Journal) -> Session:
    return journal.start_session("ctx", config(floor_span=2))


class TestTheIssueScenario:
    """Turn 7 says 'never modify /etc'; a marker on [0, 5); the truncator drops [5, 9)."""

    @pytest.fixture(name="scenario")
    def _scenario(self, s: Session) -> tuple[Session, eventstore.Marker]:
        for i in range(8):
            text = "never modify files under /etc" if i == 7 else f"turn {i}"
            s.append_turn("user", text, 10)
            if i == 4:
                s.checkpoint()
        s.state_constraint("no-etc", "never modify files under /etc")
        marker = s.emit_marker(_compact(s, 0, 5).node_id)
        fill(s, 2)
        return s, marker

    def test_the_marker_is_valid_while_turn_7_is_resident(
        self, scenario: tuple[Session, eventstore.Marker]
    ) -> None:
        """Before the truncation the digest holds the constraint through turn 7."""
        s, marker = scenario
        assert s.state.markers[marker.marker_id].valid
        assert "never modify files under /etc" in s.resume(marker.marker_id).content

    def test_the_truncation_writes_the_invalidation_in_its_own_transaction(
        self, db_path: Path, scenario: tuple[Session, eventstore.Marker]
    ) -> None:
        """Truncated and MarkerInvalidated are consecutive versions of one commit."""
        s, marker = scenario
        s.truncate(5, 9, "budget")
        (t_version, t_type, t_at), (i_version, i_type, i_at) = rows(
            db_path,
            "SELECT version, type, recorded_at FROM events WHERE session_id = 'ctx'"
            " ORDER BY version DESC LIMIT 2",
        )[::-1]
        assert (t_type, i_type, i_version, i_at) == (
            "Truncated",
            "MarkerInvalidated",
            t_version + 1,
            t_at,
        )
        (inv,) = _invalidations(s)
        assert (inv.marker_id, inv.rule) == (marker.marker_id, "M1")
        assert inv.reason.startswith(f"Truncated at v{t_version}")
        assert "'no-etc'" in inv.reason
        assert not s.state.markers[marker.marker_id].valid

    def test_resume_falls_back_to_raw_and_holds_the_constraint(
        self, scenario: tuple[Session, eventstore.Marker]
    ) -> None:
        """resume returns raw_checkpoint; its content holds turn 7, never the summary."""
        s, marker = scenario
        s.truncate(5, 9, "budget")
        ctx = s.resume(marker.marker_id)
        assert (ctx.source, ctx.checkpoint_at) == ("raw_checkpoint", 5)
        assert [line["index"] for line in _lines(ctx)] == [0, 1, 2, 3, 4, 7]
        assert "never modify files under /etc" in ctx.content
        assert '"kind":"summary"' not in ctx.content

    def test_a_journal_written_before_the_check_falls_back_on_resume(
        self, scenario: tuple[Session, eventstore.Marker]
    ) -> None:
        """A valid marker whose context lacks an obligation (no invalidation recorded, as
        in a journal written before this check) is still never trusted on resume."""
        s, marker = scenario
        after = reducers.apply(s.state, eventstore.Truncated(lo=5, hi=9, reason="old journal"))
        assert after.markers[marker.marker_id].valid
        verdict = invariants.check_marker(after, marker.node_id, tier_depth=1)
        assert [(v.rule, v.name) for v in verdict] == [("M1", "closure")]
        assert context_for(after, marker.marker_id, s.effects).source == "raw_checkpoint"


class TestTruncationBeforeEmission:
    @pytest.mark.parametrize("kind", KINDS)
    def test_emission_is_refused(self, s: Session, kind: str) -> None:
        """An obligation truncated before the marker is emitted: MarkerRefused (M1/M2)."""
        raise_it, key = RAISERS[kind]
        fill(s, 6)
        raise_it(s)  # at turn 5
        fill(s, 4)
        node = _compact(s, 0, 4)
        s.truncate(4, 8, "budget")
        with pytest.raises(eventstore.MarkerInvalid) as err:
            s.emit_marker(node.node_id)
        assert [v.rule for v in err.value.violations] == [_rule(kind)]
        assert key in err.value.violations[0].message
        assert "truncated [4, 8)" in err.value.violations[0].message
        assert isinstance(list(s.events())[-1], eventstore.MarkerRefused)


class TestBornEvicted:
    @pytest.mark.parametrize("kind", KINDS)
    def test_an_obligation_raised_onto_a_covered_turn_invalidates(
        self, s: Session, kind: str
    ) -> None:
        """Raised while the last turn is folded into a node: the marker is invalidated."""
        raise_it, key = RAISERS[kind]
        fill(s, 10)
        marker = s.emit_marker(_compact(s, 0, 10).node_id)
        raise_it(s)
        (inv,) = _invalidations(s)
        assert (inv.marker_id, inv.rule) == (marker.marker_id, _rule(kind))
        assert key in inv.reason
        assert s.resume(marker.marker_id).source == "raw_checkpoint"

    @pytest.mark.parametrize("kind", KINDS)
    def test_an_obligation_raised_onto_a_truncated_turn_invalidates(
        self, s: Session, kind: str
    ) -> None:
        """Raised while the last turn is truncated: the marker is invalidated."""
        raise_it, key = RAISERS[kind]
        fill(s, 10)
        marker = s.emit_marker(_compact(s, 0, 4).node_id)
        s.truncate(6, 10, "budget")
        assert _invalidations(s) == []
        raise_it(s)
        (inv,) = _invalidations(s)
        assert inv.marker_id == marker.marker_id
        assert key in inv.reason
        assert "truncated [6, 10)" in inv.reason

    def test_a_stale_disposition_in_the_digest_is_not_the_live_one(self, s: Session) -> None:
        """The node carries 'rejected'; re-disposed as 'failed' onto a covered turn: M2."""
        fill(s, 5)
        s.dispose("plan-a", "rejected", "no")
        fill(s, 5)
        marker = s.emit_marker(_compact(s, 0, 10, dispositions={"plan-a": "rejected"}).node_id)
        s.dispose("plan-a", "failed", "it also failed")
        (inv,) = _invalidations(s)
        assert (inv.marker_id, inv.rule) == (marker.marker_id, "M2")
        assert "'plan-a' failed" in inv.reason


class TestLaterCompaction:
    @pytest.mark.parametrize("kind", KINDS)
    def test_covering_the_resident_turn_without_carrying_it_invalidates(
        self, s: Session, kind: str
    ) -> None:
        """A marker on [0, 4); the obligation's turn 6 is folded into [4, 8) uncarried."""
        raise_it, key = RAISERS[kind]
        fill(s, 7)
        raise_it(s)  # at turn 6
        fill(s, 3)
        marker = s.emit_marker(_compact(s, 0, 4).node_id)
        node = _compact(s, 4, 8)
        (inv,) = _invalidations(s)
        assert (inv.marker_id, inv.rule) == (marker.marker_id, _rule(kind))
        assert inv.reason.startswith(f"Compacted {node.node_id}")
        assert key in inv.reason
        assert f"raised at 6 (folded into {node.node_id}, which does not carry it)" in inv.reason

    def test_a_marker_on_a_later_node_is_refused_when_an_earlier_one_dropped_a_rejection(
        self, s: Session
    ) -> None:
        """Incident 1 in a new shape: an 'explored' L1 node drops the rejection, and a
        marker on the next node would resume without it: refused, M2."""
        fill(s, 3)
        s.dispose("add-column-then-backfill", "rejected", "user said no")
        fill(s, 7)
        _compact(s, 0, 4, summary="explored approaches")
        later = _compact(s, 4, 8)
        with pytest.raises(eventstore.MarkerInvalid) as err:
            s.emit_marker(later.node_id)
        assert [v.rule for v in err.value.violations] == ["M2"]
        assert "add-column-then-backfill" in err.value.violations[0].message

    def test_replacing_the_carrier_without_carrying_invalidates(self, s: Session) -> None:
        """A tier-2 node replaces the node that carried the constraint and drops it."""
        s.append_turn("user", "never touch /etc", 10)
        s.state_constraint("no-etc", "never touch /etc")
        fill(s, 9)
        carrier = _compact(s, 0, 10, constraints=["no-etc"])
        marker = s.emit_marker(carrier.node_id)
        _compact(s, 0, 10, tier=2, replaces=[carrier.node_id], constraints=[])
        (inv,) = _invalidations(s)
        assert inv.marker_id == marker.marker_id
        assert "'no-etc'" in inv.reason


class TestNoFalseAlarm:
    def test_truncating_what_a_live_node_carries_invalidates_nothing(self, s: Session) -> None:
        """Every obligation in the truncated range is carried by a live node."""
        fill(s, 6)
        s.open_call("c1", "tool_call", "make")
        s.state_constraint("k", "never /etc")
        s.dispose("plan-a", "rejected", "no")
        fill(s, 4)
        node = _compact(
            s,
            0,
            4,
            unresolved_ids=["c1"],
            constraints=["k"],
            dispositions={"plan-a": "rejected"},
        )
        marker = s.emit_marker(node.node_id)
        s.truncate(4, 8, "budget")
        assert _invalidations(s) == []
        assert s.resume(marker.marker_id).source == "digest"

    def test_truncating_turns_without_obligations_invalidates_nothing(self, s: Session) -> None:
        """A truncation that evicts no obligation leaves the marker valid."""
        fill(s, 10)
        s.state_constraint("k", "never /etc")  # held by the resident turn 9
        marker = s.emit_marker(_compact(s, 0, 4).node_id)
        s.truncate(4, 8, "budget")
        assert _invalidations(s) == []
        assert s.resume(marker.marker_id).source == "digest"


class TestZeroTokenTurns:
    @pytest.fixture(name="tokens")
    def _tokens(self, journal: eventstore.Journal) -> Session:
        cfg = config(truncator_unit="tokens", floor_unit="tokens", floor_span=20, on_unsafe="spill")
        s = journal.start_session("tok", cfg)
        for i in range(6):
            s.append_turn("user", f"turn {i}", 10)
        s.checkpoint()
        s.append_turn("assistant", "zero-a", 0)
        s.append_turn("assistant", "zero-b", 0)
        return s

    def test_digest_context_holds_zero_token_turns_at_the_end(self, tokens: Session) -> None:
        """Turns of zero tokens at the log's end are resident and rendered."""
        marker = tokens.emit_marker(_compact(tokens, 0, 30).node_id)
        ctx = tokens.resume(marker.marker_id)
        assert ctx.source == "digest"
        assert [line.get("index") for line in _lines(ctx)] == [None, 3, 4, 5, 6, 7]

    def test_raw_context_holds_zero_token_turns_before_the_checkpoint(
        self, tokens: Session
    ) -> None:
        """A checkpoint at the end of zero-token turns keeps them in the raw prefix."""
        tokens.checkpoint()  # at 60 again, now after the two zero-token turns
        node = _compact(tokens, 0, 60)
        marker = tokens.emit_marker(node.node_id)
        _compact(tokens, 0, 60, tier=2, replaces=[node.node_id])  # M3: discarded
        ctx = tokens.resume(marker.marker_id)
        assert (ctx.source, ctx.checkpoint_at) == ("raw_checkpoint", 60)
        assert [line["index"] for line in _lines(ctx)] == list(range(8))

    def test_full_transcript_spill_holds_zero_token_turns(
        self, tokens: Session, journal: eventstore.Journal
    ) -> None:
        """A refusal's full-transcript spill is byte-complete, zero-token turns included."""
        with pytest.raises(eventstore.UnrecoverableCompactionError):
            _compact(tokens, 0, 40, input=(30, 40))  # C2: the floor is not covered
        spill = tokens.state.spills[-1]
        data = tokens.read_spill(spill).decode()
        assert [json.loads(line)["content"] for line in data.splitlines()][-2:] == [
            "zero-a",
            "zero-b",
        ]

    def test_an_explicit_spill_to_the_end_holds_them(
        self, tokens: Session, journal: eventstore.Journal
    ) -> None:
        """spill(lo, end) copies the zero-token turns at the end too."""
        spill = tokens.spill(50, 60)
        data = tokens.read_spill(spill).decode()
        assert [json.loads(line)["index"] for line in data.splitlines()] == [5, 6, 7]


class TestReplay:
    def test_verify_re_derives_the_invalidations(self, journal: eventstore.Journal) -> None:
        """An invalidation after a truncation is re-derived by verify; dropping it diverges."""
        s = journal.start_session("r", config(floor_span=2))
        fill(s, 8)
        s.state_constraint("k", "never /etc")
        s.emit_marker(_compact(s, 0, 4).node_id)
        s.truncate(4, 8, "budget")
        assert verify(journal) == []
        events = list(s.events())
        without = [e for e in events if not isinstance(e, eventstore.MarkerInvalidated)]
        (found,) = divergences(s.id, without, s.effects)
        assert "MarkerInvalidated" in found.problem
        assert "a journal written by 0.1 that reached this state was honest" in found.problem

    def test_extend_invalidates_after_the_breaking_event(self, s: Session) -> None:
        """In a batch, the invalidation follows the event that broke the marker."""
        fill(s, 8)
        s.state_constraint("k", "never /etc")
        marker = s.emit_marker(_compact(s, 0, 4).node_id)
        s.extend(
            [
                eventstore.Truncated(lo=4, hi=8, reason="budget"),
                eventstore.TurnAppended(index=8, role="user", content="more", tokens=10),
            ]
        )
        types = [type(e).__name__ for e in s.events(start=s.version - 2)]
        assert types == ["Truncated", "MarkerInvalidated", "TurnAppended"]
        assert not s.state.markers[marker.marker_id].valid


PLAIN_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.integers(0, 3)),
        st.tuples(st.just("call"), st.integers(0, 4)),
        st.tuples(st.just("resolve"), st.integers(0, 4)),
        st.tuples(st.just("constraint"), st.integers(0, 2)),
        st.tuples(st.just("dispose"), st.integers(0, 2)),
        st.tuples(st.just("truncate"), st.integers(0, 40)),
    ),
    max_size=25,
)


def _plain_events(state: eventstore.SessionState, steps: list[tuple[str, int]]) -> list[r.Event]:
    """Valid plain events for ``steps``, given the state they start from."""
    out: list[r.Event] = []
    turns, opened, open_now = state.turns, set(state.call_ids), set(state.open_calls)
    for kind, n in steps:
        if kind == "turn":
            out.append(r.TurnAppended(index=turns, role="u", content=f"t{turns}", tokens=1))
            turns += 1
        elif kind == "call" and f"b{n}" not in opened:
            opened.add(f"b{n}")
            open_now.add(f"b{n}")
            out.append(r.CallOpened(call_id=f"b{n}", kind="tool_call", name="g"))
        elif kind == "resolve" and f"b{n}" in open_now:
            open_now.discard(f"b{n}")
            out.append(r.CallResolved(call_id=f"b{n}", outcome="ok"))
        elif kind == "constraint":
            out.append(r.ConstraintStated(key=f"k{n}", text="rule"))
        elif kind == "dispose":
            out.append(r.ItemDisposed(key=f"d{n}", disposition="rejected", reason="no"))
        elif kind == "truncate":
            lo = n % turns
            out.append(r.Truncated(lo=lo, hi=lo + 1, reason="budget"))
    return out


class TestBatchesDecideLikeSingles:
    @settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(steps=PLAIN_STEPS)
    def test_extend_writes_what_one_by_one_writes(
        self, tmp_path: Path, steps: list[tuple[str, int]]
    ) -> None:
        """After a valid marker, a batch commits the same events (invalidations included,
        each after the event that caused it) as the same events appended one by one."""
        logs = []
        for name, batched in (("batch", True), ("single", False)):
            with eventstore.open(tmp_path / f"{name}-{next(_runs)}.db") as journal:
                s = journal.start_session("b", config(floor_span=2))
                fill(s, 6)
                s.state_constraint("k9", "kept")
                s.dispose("pre", "failed", "held by the resident turn 5")
                s.emit_marker(_compact(s, 0, 3, constraints=["k9"]).node_id)
                events = _plain_events(s.state, steps)
                if batched:
                    s.extend(events)
                else:
                    for event in events:
                        s.run(Record(event=event))
                logs.append(list(s.events()))
        assert logs[0] == logs[1]
