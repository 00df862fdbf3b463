"""What a report holds: each session's timeline, the version shown, its audit, its chain."""

from __future__ import annotations

from pathlib import Path

import pytest

import eventstore
from eventstore._ops._audit import audit
from eventstore._report._collect import collect
from tests.helpers import behind_its_back, fill, new_session


class TestCollect:
    def test_at_needs_a_session_and_a_version_in_range(self, journal: eventstore.Journal) -> None:
        """--at without SESSION, or outside 0..head, is bad input."""
        fill(new_session(journal), 2)
        with pytest.raises(eventstore.InvalidArgument, match="needs a SESSION"):
            collect(journal, None, 1)
        with pytest.raises(eventstore.InvalidArgument, match=r"outside 0\.\.3"):
            collect(journal, "s", 4)
        assert collect(journal, "s", 1).sessions[0].at == 1

    def test_audit_is_the_audit_command_s(self, journal: eventstore.Journal) -> None:
        """Each session carries exactly what eventstore._audit.audit reports for it."""
        s = new_session(journal)
        fill(s, 3)
        s.truncate(0, 2, "budget")
        s.state_constraint("k", "rule")
        report = collect(journal, "s")
        assert report.sessions[0].audit == audit(journal, ["s"]).sessions["s"]

    def test_the_journal_is_named_by_its_file_alone(
        self, journal: eventstore.Journal, db_path: Path
    ) -> None:
        """The page names the journal's file, not the folders above it."""
        fill(new_session(journal), 1)
        assert collect(journal).journal == db_path.name

    def test_the_listing_comes_only_with_every_session(self, journal: eventstore.Journal) -> None:
        """Without SESSION: every session and the sessions table; with one: that one alone."""
        for sid in ("a", "b"):
            fill(new_session(journal, sid), 1)
        every, one = collect(journal), collect(journal, "b")
        assert [s.timeline.session_id for s in every.sessions] == ["a", "b"]
        assert [row.session_id for row in every.listing or ()] == ["a", "b"]
        assert ([s.timeline.session_id for s in one.sessions], one.listing) == (["b"], None)


class TestBrokenChain:
    def test_a_session_is_drawn_whole_and_its_first_bad_version_named(
        self, journal: eventstore.Journal, db_path: Path
    ) -> None:
        """An edited row: every event still reaches the timeline, and the report names
        the session's first bad version (the others verify)."""
        fill(new_session(journal, "a"), 3)
        fill(new_session(journal, "b"), 1)
        with behind_its_back(db_path) as conn:
            conn.execute(
                "UPDATE events SET payload = replace(payload, 'turn 1', 'turn X')"
                " WHERE session_id = 'a' AND version = 3"
            )
        report = collect(journal)
        a, b = report.sessions
        assert a.timeline.version == 4
        assert a.timeline.turn_info[1].preview == "turn X"
        assert [(p.session_id, p.version) for p in report.broken] == [("a", 3)]
        assert b.chain is None
