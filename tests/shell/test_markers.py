"""A refused marker keeps its evidence: under ``on_unsafe="spill"`` the raw turns that
hold what its node dropped are spilled first, with the same storage and checks as a
compaction refusal's spill."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import eventstore
import reducers as r
from eventstore._ops._audit import verify
from eventstore._ops._transfer import export_lines, import_file
from tests.helpers import config, fill


def dropping(journal: eventstore.Journal, on_unsafe: str = "spill") -> eventstore.Session:
    """A session whose only node (``NODE``) drops the rejection raised after turn 1."""
    s = journal.start_session("s", config(on_unsafe=on_unsafe))
    s.append_turn("user", "Add tenant_id.", 10)
    s.append_turn("assistant", "Plan A: backfill first.", 10)
    s.dispose("backfill", "rejected", "the user rejected it")
    s.append_turn("user", "No backfill.", 10)
    fill(s, 3)
    node = s.compact(tier=1, input=(0, 4), covers=(0, 4), tail_start=4, summary="x", tokens=3)
    assert node.node_id == NODE
    return s


NODE = "n9"


@pytest.fixture(name="journal")
def _journal(tmp_path: Path) -> eventstore.Journal:
    return eventstore.open(tmp_path / "agent.db")


class TestRefusalSpills:
    def test_the_turns_that_hold_what_was_dropped_are_spilled(
        self, journal: eventstore.Journal
    ) -> None:
        """Spilled then MarkerRefused(action=spilled); the spill reads back the turn."""
        s = dropping(journal)
        with pytest.raises(eventstore.MarkerInvalid) as refused:
            s.emit_marker(NODE)
        spill = refused.value.spilled
        assert spill is not None
        assert (spill.lo, spill.hi) == (1, 2)
        *_, spilled, marker = s.events()
        assert spilled == spill
        assert isinstance(marker, r.MarkerRefused)
        assert marker.action == "spilled"
        (turn,) = [json.loads(line) for line in s.read_spill(spill.handle).splitlines()]
        assert turn["content"] == "Plan A: backfill first."
        assert verify(journal) == []

    def test_halt_spills_nothing(self, journal: eventstore.Journal) -> None:
        """With on_unsafe="halt" the refusal is recorded alone, as before."""
        s = dropping(journal, on_unsafe="halt")
        with pytest.raises(eventstore.MarkerInvalid) as refused:
            s.emit_marker(NODE)
        assert refused.value.spilled is None
        assert s.state.spills == r.SessionState().spills
        last = list(s.events())[-1]
        assert isinstance(last, r.MarkerRefused)
        assert last.action == "halted"

    def test_a_depth_refusal_drops_nothing_and_spills_nothing(
        self, journal: eventstore.Journal
    ) -> None:
        """An M3-only refusal (a replaced node) has no dropped obligation to keep."""
        s = journal.start_session("s", config(on_unsafe="spill"))
        fill(s, 6)
        a = s.compact(tier=1, input=(0, 4), covers=(0, 4), tail_start=4, summary="a", tokens=3)
        s.compact(
            tier=2,
            input=(0, 4),
            covers=(0, 4),
            tail_start=4,
            summary="b",
            tokens=2,
            replaces=[a.node_id],
        )
        with pytest.raises(eventstore.MarkerInvalid) as refused:
            s.emit_marker(a.node_id)
        assert [v.rule for v in refused.value.violations] == ["M3", "M3"]
        assert refused.value.spilled is None

    def test_a_gap_outside_the_node_is_spilled_too(self, journal: eventstore.Journal) -> None:
        """A truncated constraint the digest context lacks is in the spilled range."""
        s = journal.start_session("s", config(on_unsafe="spill"))
        s.append_turn("user", "Never modify /etc.", 10)
        s.state_constraint("no-etc", "never modify /etc")
        fill(s, 7)
        s.truncate(0, 1, "budget")
        node = s.compact(
            tier=1,
            input=(2, 6),
            covers=(2, 6),
            tail_start=6,
            summary="a",
            tokens=3,
            constraints=["no-etc"],
        )
        s.state_constraint("no-etc", "never modify /etc or /usr")  # on a resident turn
        s.truncate(7, 8, "budget")  # the restatement's turn goes
        with pytest.raises(eventstore.MarkerInvalid) as refused:
            s.emit_marker(node.node_id)
        spill = refused.value.spilled
        assert spill is not None
        assert (spill.lo, spill.hi) == (7, 8)
        assert verify(journal) == []

    def test_import_re_derives_the_spill(self, journal: eventstore.Journal, tmp_path: Path) -> None:
        """An export with a marker-refusal spill imports with nothing re-decided."""
        s = dropping(journal)
        with pytest.raises(eventstore.MarkerInvalid):
            s.emit_marker(NODE)
        lines = list(export_lines(journal, "s"))
        with eventstore.open(tmp_path / "copy.db") as copy:
            (imported,) = import_file(copy, lines)
            assert (imported.redecided, imported.skipped) == (0, ())
            assert copy.session("s").state.sha256 == s.state.sha256
            assert verify(copy) == []

    def test_a_missing_spill_file_is_a_finding(self, journal: eventstore.Journal) -> None:
        """The spill is checked like any other: a deleted file is a verify finding."""
        s = dropping(journal)
        with pytest.raises(eventstore.MarkerInvalid) as refused:
            s.emit_marker(NODE)
        assert refused.value.spilled is not None
        (Path(journal.spills.location) / refused.value.spilled.handle).unlink()
        assert [f.check for f in verify(journal)] == ["spill"]
