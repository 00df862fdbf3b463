"""A node's claims checked against the ledger: each check refuses a hand-made case and
accepts its honest twin, in the pure layers and through a real session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

import eventstore
import invariants
import reducers as r
from eventstore._decide import marker_gate
from eventstore._ops._audit import verify
from tests.helpers import config, fill

BASE = r.SessionStarted(
    window_tokens=10_000,
    trigger_tokens=8_000,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="halt",
)
NO_ETC = r.ConstraintStated(key="no-etc", text="never modify files under /etc")
GREP = r.CallOpened(call_id="grep-1", kind="tool_call", name="grep -rn tenant_id")


def turns(n: int, start: int = 0) -> list[r.Event]:
    return [r.TurnAppended(index=i, role="u", content=f"t{i}", tokens=10) for i in range(start, n)]


def fold(*events: r.Event) -> r.SessionState:
    return more(r.SessionState(), BASE, *events)


def more(state: r.SessionState, *events: r.Event) -> r.SessionState:
    """``state`` after ``events``, each validated as the session would."""
    return r.fold(events, state, check=invariants.validate)


def node(node_id: str = "n", hi: int = 4, **carried: Any) -> r.Compacted:
    return r.Compacted(
        node_id=node_id,
        tier=1,
        input_lo=0,
        input_hi=hi,
        covers_lo=0,
        covers_hi=hi,
        tail_start=hi,
        summary="s",
        tokens=3,
        **carried,
    )


def names(found: list[r.Violation]) -> list[tuple[str, str]]:
    return [(v.rule, v.name) for v in found]


class TestFalseClosure:
    def test_a_resolved_listing_of_an_open_call_is_refused(self) -> None:
        """A proposal listing an open call as resolved is M1 false_closure, naming the call."""
        state = fold(*turns(1), GREP, *turns(6, 1))
        found = invariants.check_compaction(state, node(resolved_ids=["grep-1"]))
        assert names(found) == [("M1", "false_closure")]
        assert "'grep-1' as resolved but the log holds it open" in found[0].message
        assert (found[0].lo, found[0].hi) == (0, 1)

    def test_its_honest_twins_pass(self) -> None:
        """Listed as UNRESOLVED, or as resolved once the log resolved it, the call passes."""
        state = fold(*turns(1), GREP, *turns(6, 1))
        assert invariants.check_compaction(state, node(unresolved_ids=["grep-1"])) == []
        resolved = more(state, r.CallResolved(call_id="grep-1", outcome="1 match"))
        assert invariants.check_compaction(resolved, node(resolved_ids=["grep-1"])) == []

    def test_a_false_closure_carries_nothing(self) -> None:
        """A node (of an older journal) that falsely closed a call does not carry it."""
        state = fold(*turns(1), GREP, *turns(6, 1), node(resolved_ids=["grep-1"]))
        assert [(o.key, o.because) for o in invariants.owed(state)] == [
            ("grep-1", "folded into n, which lists it as resolved while the log holds it open")
        ]
        assert names(invariants.check_marker(state, "n")) == [("M1", "false_closure")]

    def test_a_gated_refusal_names_it_once(self) -> None:
        """The marker gate leaves false_closure to check_compaction: reported once."""
        state = fold(*turns(1), GREP, *turns(6, 1))
        assert marker_gate(state, node(resolved_ids=["grep-1"])) == []


class TestConstraintText:
    def _carried(self) -> r.SessionState:
        return fold(*turns(1), NO_ETC, *turns(6, 1), node("n7", hi=6, constraints=["no-etc"]))

    def test_a_restatement_with_another_text_is_not_carried(self) -> None:
        """Restated with another text onto a folded turn, the node no longer carries it."""
        state = self._carried()
        assert state.nodes["n7"].carries_constraint("no-etc")
        state = more(state, r.ConstraintStated(key="no-etc", text="never modify /etc or /usr"))
        assert not state.nodes["n7"].carries_constraint("no-etc")
        (owed,) = invariants.owed(state)
        assert (owed.text, owed.why, owed.node_id) == ("never modify /etc or /usr", "dropped", "n7")
        assert owed.because == "folded into n7, which carries another text of it"

    def test_the_same_text_again_is_still_carried(self) -> None:
        """The honest twin: restated with the same text, the node still carries it."""
        state = more(self._carried(), NO_ETC)
        assert state.nodes["n7"].carries_constraint("no-etc")
        assert invariants.owed(state) == ()

    def test_restated_back_to_the_text_the_node_saw(self) -> None:
        """Changed and changed back, the node carries it again (a digest of key and text)."""
        other = r.ConstraintStated(key="no-etc", text="never /etc or /usr")
        state = more(self._carried(), other, NO_ETC)
        assert state.nodes["n7"].stale_constraints == {}
        assert invariants.owed(state) == ()

    def test_a_lift_ends_the_statement_the_node_carried(self) -> None:
        """Lifted and stated again (same text), the older node does not carry the new one."""
        state = more(self._carried(), r.ConstraintLifted(key="no-etc"), NO_ETC)
        assert state.nodes["n7"].stale_constraints == {"no-etc": ""}
        assert [o.key for o in invariants.owed(state)] == ["no-etc"]

    def test_a_key_listed_while_not_pending_carries_nothing(self) -> None:
        """A node listing a constraint no one stated yet does not carry it once stated."""
        state = fold(*turns(6), node("n7", hi=6, constraints=["no-etc"]))
        assert state.nodes["n7"].stale_constraints == {"no-etc": ""}
        state = more(state, r.Truncated(lo=5, hi=6, reason="b"), NO_ETC)
        assert [o.key for o in invariants.owed(state)] == ["no-etc"]

    def test_c5_asks_the_next_summary_for_the_live_text(self) -> None:
        """A truncated constraint carried with an old text must be carried again (C5)."""
        events = [*turns(1), NO_ETC, *turns(4, 1), node("n4", hi=3, constraints=["no-etc"])]
        state = fold(*events, r.ConstraintStated(key="no-etc", text="new"), *turns(8, 4))
        state = more(state, r.Truncated(lo=0, hi=4, reason="b"))
        proposal = r.Compacted(
            node_id="p",
            tier=1,
            input_lo=4,
            input_hi=8,
            covers_lo=3,
            covers_hi=8,
            tail_start=8,
            summary="s",
            tokens=3,
        )
        assert names(invariants.check_compaction(state, proposal)) == [("C5", "obligation_evicted")]
        carried = attrs.evolve(proposal, constraints=("no-etc",))
        assert invariants.check_compaction(state, carried) == []

    def test_an_honest_journal_hashes_as_before(self) -> None:
        """Nodes whose claims stay true keep no stale key: the state JSON has none."""
        assert "stale_constraints" not in self._carried().to_json()["nodes"]["n7"]


class TestDisposition:
    def _carried(self) -> r.SessionState:
        fact = r.ItemDisposed(key="backfill", disposition="rejected", reason="locks")
        return fold(
            *turns(1), fact, *turns(6, 1), node("n7", hi=6, dispositions={"backfill": "rejected"})
        )

    def test_a_redisposition_is_not_carried_by_the_old_one(self) -> None:
        """Re-disposed as failed onto a folded turn, the node's 'rejected' carries nothing."""
        again = r.ItemDisposed(key="backfill", disposition="failed", reason="timed out")
        (owed,) = invariants.owed(more(self._carried(), again))
        assert (owed.key, owed.status) == ("backfill", "failed")

    def test_the_same_disposition_again_is_carried(self) -> None:
        """The honest twin: re-disposed as rejected (another reason), still carried."""
        again = r.ItemDisposed(key="backfill", disposition="rejected", reason="again")
        assert invariants.owed(more(self._carried(), again)) == ()


@pytest.fixture(name="journal")
def _journal(tmp_path: Path) -> eventstore.Journal:
    return eventstore.open(tmp_path / "claims.db")


class TestThroughASession:
    def test_a_false_closure_is_recorded_as_refused(self, journal: eventstore.Journal) -> None:
        """The session refuses it, records CompactionRefused, and verify re-derives it."""
        s = journal.start_session("s", config())
        fill(s, 1)
        s.open_call("grep-1", "tool_call", "grep")
        fill(s, 5)
        with pytest.raises(eventstore.UnrecoverableCompactionError) as refused:
            s.compact(
                tier=1,
                input=(0, 4),
                covers=(0, 4),
                tail_start=4,
                summary="s",
                tokens=1,
                resolved_ids=["grep-1"],
            )
        assert [v.name for v in refused.value.violations] == ["false_closure"]
        assert s.state.nodes == {}
        node = s.compact(
            tier=1,
            input=(0, 4),
            covers=(0, 4),
            tail_start=4,
            summary="s",
            tokens=1,
            unresolved_ids=["grep-1"],
        )
        s.emit_marker(node.node_id)
        assert verify(journal) == []

    def test_a_restated_constraint_invalidates_the_marker(
        self, journal: eventstore.Journal
    ) -> None:
        """Restated with another text while its node frames the context, the marker goes."""
        s = journal.start_session("s", config())
        fill(s, 1)
        s.state_constraint("no-etc", "never modify files under /etc")
        fill(s, 3)
        node = s.compact(
            tier=1,
            input=(0, 4),
            covers=(0, 4),
            tail_start=4,
            summary="s",
            tokens=1,
            constraints=["no-etc"],
        )
        marker = s.emit_marker(node.node_id)
        s.state_constraint("no-etc", "never modify files under /etc")  # the same: nothing
        assert s.state.markers[marker.marker_id].valid
        s.state_constraint("no-etc", "never modify /etc or /usr")
        assert not s.state.markers[marker.marker_id].valid
        assert "carries another text of it" in (
            s.state.markers[marker.marker_id].invalidated_reason or ""
        )
        assert verify(journal) == []
