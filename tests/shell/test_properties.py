"""Properties over random session scripts, on real journal files."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given

import eventstore
import invariants
import reducers as r
from eventstore._decide import verified
from eventstore._ops._replay import divergences
from tests import strategies
from tests.helpers import config, run_step


def _tier_state(state: r.SessionState) -> tuple[object, ...]:
    return (
        dict(state.nodes),
        state.occupancy,
        state.tail_start,
        state.depth,
        state.truncated,
        state.turns,
        dict(state.open_calls),
        dict(state.constraints),
    )


def _play(db: Path, steps: list[strategies.Step], unit: str, every: int) -> eventstore.Session:
    journal = eventstore.open(db, synchronous="normal", snapshot_every=every)
    s = journal.start_session(
        "p", config(truncator_unit=unit, floor_unit=unit, on_unsafe="spill", floor_span=3)
    )
    for kind, params in steps:
        before = s.state
        outcome = run_step(s, kind, params)
        after = s.state
        if outcome == "InvalidEvent":
            assert after.version == before.version, f"{kind} wrote despite InvalidEvent"
        if outcome in ("UnrecoverableCompactionError", "MarkerInvalid"):
            assert _tier_state(after) == _tier_state(before), f"refused {kind} changed tiers"
    return s


class TestReplay:
    @given(steps=strategies.scripts(), unit=strategies.st.sampled_from(r.UNITS))
    def test_cold_snapshot_and_incremental_states_agree(
        self, steps: list[strategies.Step], unit: str
    ) -> None:
        """Live state, a cold replay and a snapshot-assisted reopen have one sha256."""
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "p.db"
            live = _play(db, steps, unit, every=5).state
            cold = r.fold(eventstore.open(db, snapshot_every=0).session("p").events())
            warm = eventstore.open(db).session("p").state
            assert live.sha256 == cold.sha256 == warm.sha256
            assert live == cold

    @given(steps=strategies.scripts(), unit=strategies.st.sampled_from(r.UNITS))
    def test_committed_compactions_pass_on_replay(
        self, steps: list[strategies.Step], unit: str
    ) -> None:
        """Every Compacted in the log passes C1-C5 against the state before it; verify agrees."""
        with tempfile.TemporaryDirectory() as tmp:
            s = _play(Path(tmp) / "p.db", steps, unit, every=0)
            state = before_spill = r.SessionState()
            for event in s.events():
                if isinstance(event, r.Compacted):
                    assert (
                        invariants.check_compaction(verified(state, event, s.effects), event) == []
                    )
                if isinstance(event, r.CompactionRefused):
                    decided_on = before_spill if event.action == "spilled" else state
                    assert invariants.check_compaction(decided_on, event.proposal) != []
                before_spill, state = state, r.apply(state, event)
            assert list(divergences(s.id, s.events(), s.effects)) == []

    @given(steps=strategies.scripts(max_steps=25))
    def test_apply_never_changes_its_input(self, steps: list[strategies.Step]) -> None:
        """Folding one event at a time, and branching, leaves every earlier state as it was.

        Compared through ``to_json`` recomputed at the end, not the cached ``sha256``.
        """
        with tempfile.TemporaryDirectory() as tmp:
            events = list(_play(Path(tmp) / "p.db", steps, "turns", every=0).events())
        states = [r.SessionState()]
        seen = [r.canonical_json(states[0].to_json())]
        for event in events:
            states.append(r.apply(states[-1], event))
            seen.append(r.canonical_json(states[-1].to_json()))
        middle = states[len(states) // 2]
        r.apply(middle, r.TurnAppended(index=middle.turns, role="u", content="", tokens=7))
        assert [r.canonical_json(st.to_json()) for st in states] == seen
