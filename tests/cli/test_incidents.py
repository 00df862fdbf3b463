"""The SPEC's two acceptance incidents, end to end on a real journal: a SQLite file
and a PostgreSQL schema."""

from __future__ import annotations

import hashlib
import json

import pytest

import eventstore
from eventstore.cli._incidents import (
    DroppedRejection,
    EvictedConstraint,
    dropped_rejection,
    evicted_constraint,
)
from tests.targets import Target, on_both

pytestmark = on_both


@pytest.fixture(name="incident1")
def _incident1(journal: eventstore.Journal) -> DroppedRejection:
    return dropped_rejection(journal, lambda _: None)


@pytest.fixture(name="incident2")
def _incident2(journal: eventstore.Journal) -> EvictedConstraint:
    return evicted_constraint(journal, lambda _: None)


def _types(session: eventstore.Session) -> list[str]:
    return [type(e).__name__ for e in session.events()]


class TestDroppedRejection:
    def test_marker_on_lossy_digest_is_refused_by_m2(self, incident1: DroppedRejection) -> None:
        """The 'explored approaches' digest drops the rejection: MarkerInvalid, rule M2 only."""
        assert [(v.rule, v.name) for v in incident1.refusal.violations] == [
            ("M2", "negative_fact_dropped")
        ]
        assert "add-column-then-backfill" in incident1.refusal.violations[0].message
        assert _types(incident1.session)[-2:] == ["MarkerRefused", "Resumed"]

    def test_resume_falls_back_to_raw_checkpoint_wholesale(
        self, incident1: DroppedRejection
    ) -> None:
        """Resume returns every raw turn before the checkpoint, verbatim, and no summary."""
        ctx = incident1.fallback
        assert (ctx.source, ctx.checkpoint_at) == ("raw_checkpoint", 6)
        lines = [json.loads(line) for line in ctx.content.splitlines()]
        assert [line["index"] for line in lines] == list(range(6))
        assert "explored approaches" not in ctx.content
        assert "drop add-column-then-backfill" in ctx.content
        assert ctx.sha256 == hashlib.sha256(ctx.content.encode()).hexdigest()

    def test_l1_marker_invalidated_in_the_l2_compaction_transaction(
        self, target: Target, incident1: DroppedRejection
    ) -> None:
        """MarkerInvalidated (M3) is the event right after the L2 Compacted, same commit."""
        sid = incident1.depth_session.id
        written = target.rows(
            f"SELECT version, type, recorded_at FROM events WHERE session_id = '{sid}'"
            " AND type IN ('Compacted', 'MarkerInvalidated') ORDER BY version",
        )
        (_, _, _), (v_l2, t_l2, at_l2), (v_inv, t_inv, at_inv) = written
        assert (t_l2, t_inv) == ("Compacted", "MarkerInvalidated")
        assert v_inv == v_l2 + 1
        assert at_inv == at_l2
        marker = incident1.depth_session.state.markers[incident1.l1_marker]
        assert (marker.valid, marker.invalidated_rule) == (False, "M3")

    def test_resume_after_depth_change_is_raw_never_patched(
        self, incident1: DroppedRejection
    ) -> None:
        """The digest was trusted before the L2 re-compaction and discarded wholesale after."""
        assert incident1.digest_before.source == "digest"
        after = incident1.fallback_after_l2
        assert (after.source, after.checkpoint_at) == ("raw_checkpoint", 6)
        assert '"kind":"summary"' not in after.content

    def test_two_resumes_are_byte_identical(self, incident1: DroppedRejection) -> None:
        """Resuming the same marker twice gives the same bytes and sha256."""
        s = incident1.depth_session
        first, second = s.resume(incident1.l1_marker), s.resume(incident1.l1_marker)
        assert first.content == second.content
        assert first.sha256 == second.sha256


class TestEvictedConstraint:
    def test_refused_for_c1_and_c5(self, incident2: EvictedConstraint) -> None:
        """Floor in turns under a token truncator (C1) and the /etc constraint evicted (C5)."""
        found = incident2.refusal.violations
        assert [(v.rule, v.name) for v in found] == [
            ("C1", "unit_mismatch"),
            ("C5", "obligation_evicted"),
        ]
        assert "no-etc-writes" in found[1].message

    def test_c5_alone_once_units_agree(self, incident2: EvictedConstraint) -> None:
        """With the floor in tokens, C5 still refuses on its own."""
        assert [v.rule for v in incident2.refusal_units_agree.violations] == ["C5"]

    def test_spill_file_matches_its_event(
        self, target: Target, incident2: EvictedConstraint
    ) -> None:
        """The spill holds the full raw transcript and its sha256 and size match the event."""
        s = incident2.session
        spill = s.state.spills[-1]
        data = s.read_spill(spill)
        assert hashlib.sha256(data).hexdigest() == spill.sha256
        assert len(data) == spill.bytes
        assert (spill.lo, spill.hi) == (0, s.state.end)
        assert len(data.splitlines()) == s.state.turns
        assert b"Never modify files under /etc" in data

    def test_refusal_changes_no_tier_state(self, incident2: EvictedConstraint) -> None:
        """Before and after the refusal: no node, same occupancy, tail and truncations."""
        s = incident2.session
        before, after = s.state_at(s.version - 2), s.state
        assert _types(s)[-2:] == ["Spilled", "CompactionRefused"]
        assert after.nodes == before.nodes == {}
        assert (after.occupancy, after.tail_start, after.truncated) == (
            before.occupancy,
            before.tail_start,
            before.truncated,
        )
        assert after.occupancy == 163_000

    def test_the_scenario_matches_the_record(self, incident2: EvictedConstraint) -> None:
        """200k window, 160k trigger, floor 12 turns, 8 oldest turns truncated, input at turn 9."""
        s = incident2.session
        cfg = s.state.config
        assert cfg is not None
        assert (cfg.window_tokens, cfg.trigger_tokens, cfg.floor_span) == (200_000, 160_000, 12)
        assert s.state.truncated == ((0, s.state.position_of_turn(8)),)
        refused = next(e for e in s.events() if isinstance(e, eventstore.CompactionRefused))
        assert refused.proposal.input_lo == s.state.position_of_turn(9)
        assert refused.action == "spilled"
