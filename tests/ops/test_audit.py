"""``audit`` and ``verify`` as a library: each section's rows, what counts as a finding,
and how a finding reads."""

from __future__ import annotations

from pathlib import Path

import eventstore
from eventstore._ops._audit import Finding, audit, evicted_obligations, verify
from tests.helpers import behind_its_back, fill, new_session
from tests.tampers import SID, story
from tests.targets import Target, on_both
from tests.timelines import story_session


class TestAudit:
    @on_both
    def test_each_section_holds_the_story_s_rows(self, journal: eventstore.Journal) -> None:
        """The refusal, the refused marker, both invalidations, the raw fallback and the
        evicted call are each listed at their version, on either backend."""
        story_session(journal)
        got = audit(journal).sessions["story"]
        assert [(r.version, r.action, r.rules) for r in got.compaction_refusals] == [
            (13, "spilled", "C5,C5")
        ]
        assert [(r.version, r.marker_id, r.rules) for r in got.marker_refusals] == [
            (24, "m24", "M3,M3")
        ]
        assert [(r.version, r.marker_id, r.rule) for r in got.marker_invalidations] == [
            (22, "m15", "M3"),
            (28, "m25", "M1"),
        ]
        assert [(r.version, r.marker_id, r.checkpoint_at) for r in got.raw_fallbacks] == [
            (23, "m15", 0)
        ]
        assert [(o.kind, o.key, o.carried_by) for o in got.evicted_obligations] == [
            ("open_call", "call-1", ())
        ]
        assert got.findings

    def test_totals_add_up_over_sessions(self, journal: eventstore.Journal) -> None:
        """Each total is the sum of its section's rows over the sessions audited."""
        story_session(journal)
        fill(new_session(journal, "quiet"), 2)
        report = audit(journal)
        assert report.totals["marker_invalidations"] == 2
        assert report.totals["compaction_refusals"] == 1
        assert (report.findings, report.sessions["quiet"].findings) == (True, False)
        assert audit(journal, ["quiet"]).totals == dict.fromkeys(report.totals, 0)

    def test_a_carried_evicted_obligation_is_listed_but_no_finding(
        self, journal: eventstore.Journal
    ) -> None:
        """A truncated constraint that a live summary carries is shown, carried, and
        needs no one."""
        s = new_session(journal)
        s.append_turn("user", "never touch /etc", 5)
        s.state_constraint("no-etc", "never touch /etc")
        fill(s, 3)
        node = s.compact(
            tier=1,
            input=(0, 2),
            covers=(0, 2),
            tail_start=2,
            summary="s",
            tokens=1,
            constraints=["no-etc"],
        )
        s.truncate(0, 1, "budget")
        (row,) = evicted_obligations(s.state)
        assert (row.kind, row.key, row.position, row.carried_by) == (
            "constraint",
            "no-etc",
            0,
            (node.node_id,),
        )
        assert not audit(journal).findings

    @on_both
    def test_a_row_edited_before_the_snapshot_is_named(self, target: Target) -> None:
        """Audit shows rows as stored, so it walks every link, not only those after the
        snapshot the state starts from: an invalidation edited there is named, as in
        the CLI's line for the session (exit 1)."""
        with eventstore.open(target.location, snapshot_every=5) as journal:
            story(journal)
        target.tamper(
            "UPDATE events SET payload = replace(payload, 'depth_mismatch', 'all_fine')"
            " WHERE type = 'MarkerInvalidated'"
        )
        with eventstore.open(target.location, readonly=True) as journal:
            assert journal.snapshots.check(SID) is not None  # the state starts after v14
            report = audit(journal)
        assert report.sessions[SID].chain == "v14: hash does not match the event's content"
        assert report.findings


class TestVerify:
    def test_an_honest_journal_has_no_finding(self, journal: eventstore.Journal) -> None:
        """The story's refusals and invalidations are decisions, not faults."""
        story_session(journal)
        assert verify(journal) == []

    def test_a_finding_names_its_check_session_and_version(
        self, journal: eventstore.Journal, db_path: Path
    ) -> None:
        """An edited row is a chain finding at its version, read as one line."""
        fill(new_session(journal), 3)
        with behind_its_back(db_path) as conn:
            conn.execute(
                "UPDATE events SET payload = replace(payload, 'turn 1', 'x') WHERE version = 3"
            )
        (found,) = verify(journal)
        assert (found.check, found.session_id, found.version, found.fatal) == (
            "chain",
            "s",
            3,
            True,
        )
        assert str(found) == "chain     s v3: hash does not match the event's content"

    def test_a_file_wide_finding_reads_as_the_database_s(self) -> None:
        """A finding of no session is said of the database."""
        note = Finding(check="integrity", session_id=None, version=None, problem="p")
        assert str(note) == "integrity database: p"
