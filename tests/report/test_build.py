"""The timeline builder: one pass over a session's events, folded in bounded chunks."""

from __future__ import annotations

import pytest

import eventstore
from eventstore._report import _build
from eventstore._report._build import build
from tests.helpers import fill, new_session
from tests.timelines import withdrawal_session


class TestBuild:
    @pytest.mark.parametrize("chunk", [1, 2, 7])
    def test_chunks_of_any_size_give_the_same_timeline(
        self, journal: eventstore.Journal, monkeypatch: pytest.MonkeyPatch, chunk: int
    ) -> None:
        """Folding a few events at a time (memory bounded) changes nothing drawn."""
        s = withdrawal_session(journal, unit="tokens")
        whole = build(s.id, s.events())
        monkeypatch.setattr(_build, "_CHUNK", chunk)
        assert build(s.id, s.events()) == whole

    def test_no_events_draw_nothing(self) -> None:
        """A session with no event yet: version 0, no config, no mark."""
        t = build("empty", [])
        assert (t.version, t.config, t.turns) == (0, None, 0)
        assert [len(t.nodes), len(t.markers), len(t.obligations), len(t.withdrawals)] == [0] * 4

    def test_a_withdrawal_is_not_blamed_for_a_later_compaction_s_invalidation(
        self, journal: eventstore.Journal
    ) -> None:
        """Only the MarkerInvalidated written in the withdrawal's own transaction count as
        the markers it broke; one a later compaction writes is that compaction's."""
        s = new_session(journal)
        fill(s, 6)
        node = s.compact(tier=1, input=(0, 4), covers=(0, 4), tail_start=4, summary="a", tokens=1)
        marker = s.emit_marker(node.node_id)
        s.retract_turn(5, "pop_item")  # a resident turn that holds nothing: breaks nothing
        s.compact(
            tier=2,
            input=(0, 5),
            covers=(0, 5),
            tail_start=5,
            summary="b",
            tokens=1,
            replaces=[node.node_id],
        )
        t = build(s.id, s.events())
        (retraction,) = t.withdrawals
        (pin,) = t.markers
        assert retraction.invalidated == ()
        assert (pin.marker_id, pin.rule) == (marker.marker_id, "M3")
        assert pin.invalidated_at == t.event_types.index("MarkerInvalidated") + 1
