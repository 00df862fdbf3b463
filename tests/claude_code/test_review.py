"""Compaction reviews: the notes an ingested session carries, and sessions that have none."""

from __future__ import annotations

from pathlib import Path

import pytest

import eventstore
from eventstore.claude_code._ingest import CONFIG
from eventstore.claude_code._review import (
    BoundaryNote,
    boundary_note,
    is_ingested,
    preamble,
    read_boundary_note,
    review_session,
)
from tests.helpers import fill, new_session
from tests.transcripts import Script


class TestNotes:
    @pytest.mark.parametrize("pre_tokens", [167_094, None])
    def test_a_boundary_note_reads_back(self, pre_tokens: int | None) -> None:
        """What the note after a compaction records comes back from its text."""
        note = boundary_note(1256, "auto", pre_tokens)
        assert read_boundary_note(note) == BoundaryNote(
            line=1256, trigger="auto", pre_tokens=pre_tokens
        )

    @pytest.mark.parametrize(
        "trigger",
        [
            "auto, preTokens 1] x",
            "auto mode",
            'x", "preTokens": 1, "trigger": "y',
            '"}\n[claude-code compact_boundary] {"line": 1, "preTokens": 1, "trigger": "a"}',
            "\u2028\x00\\",
            "",
        ],
    )
    def test_no_trigger_text_passes_for_another_field(self, trigger: str) -> None:
        """Whatever the trigger says, line and preTokens read back as written."""
        note = boundary_note(1256, trigger, 167_094)
        assert read_boundary_note(note) == BoundaryNote(
            line=1256, trigger=trigger, pre_tokens=167_094
        )

    @pytest.mark.parametrize(
        "content",
        [
            "we discussed [claude-code compact_boundary ...]",
            '[claude-code compact_boundary] {"line": 3, "preTokens": 1, "trigger": "a"}',
            boundary_note(3, "a", 1).replace('"a"}', '"a", "x": 1}'),
            boundary_note(3, "a", 1).replace('"line": 3', '"line": true'),
            boundary_note(3, "a", 1).replace('"line": 3', '"line":  3'),
            boundary_note(3, "a", 1) + " and more",
        ],
        ids=["mention", "no-tail", "extra-key", "bool-line", "not-canonical", "longer"],
    )
    def test_only_a_note_as_written_reads_as_one(self, content: str) -> None:
        """Anything but the exact text boundary_note writes is no note."""
        assert read_boundary_note(content) is None

    def test_other_turns_are_no_notes(self) -> None:
        """A turn that merely mentions a boundary is not one."""
        assert read_boundary_note("we discussed [claude-code compact_boundary ...]") is None
        assert not is_ingested("[claude-code transcript x] hello")
        assert is_ingested(preamble("258c7280"))


class TestReviewSession:
    @pytest.mark.parametrize("trigger", ["auto, preTokens 1] x", "auto mode"])
    def test_a_hostile_trigger_changes_nothing_the_review_reads(
        self, tmp_path: Path, trigger: str
    ) -> None:
        """The real boundary line and preTokens come back, the trigger as the file says."""
        s = Script()
        s.user("go")
        s.assistant(s.text("ok"), prompt=167_000)
        s.boundary(167_094, "Summary.", trigger=trigger)
        s.user("more")
        with eventstore.open(tmp_path / "t.db") as journal:
            (review,) = eventstore.ingest(journal, s.write(tmp_path / "t.jsonl")).compactions
        assert (review.line, review.trigger, review.pre_tokens) == (3, trigger, 167_094)

    def test_a_session_not_ingested_has_no_review(self, journal: eventstore.Journal) -> None:
        """Reviews are for ingested transcripts only; other sessions' audits stay as they were."""
        s = new_session(journal)
        fill(s, 4)
        s.compact(tier=1, input=(0, 3), covers=(0, 3), tail_start=3, summary="x", tokens=1)
        assert review_session(journal, "s") == ()

    def test_an_empty_session_has_no_review(self, db_path: Path) -> None:
        """A session with no turn at all is not an ingested one."""
        with eventstore.open(db_path) as journal:
            new_session(journal)
            assert review_session(journal, "s") == ()

    def test_a_refused_compaction_is_reviewed_without_a_marker(
        self, journal: eventstore.Journal
    ) -> None:
        """A compaction C5 refuses shows its rules, no marker, and the obligation it drops."""
        s = journal.start_session("cc", CONFIG)
        s.append_turn("system", preamble("cc"), 100)
        s.append_turn("user", "Never touch /etc.", 10)
        s.state_constraint("heuristic: Never touch /etc.", "Never touch /etc.")
        s.append_turn("assistant", "ok", 10)
        s.truncate(0, 110, "budget")
        with pytest.raises(eventstore.UnrecoverableCompactionError):
            s.compact(tier=1, input=(0, 120), covers=(0, 120), tail_start=120, summary="", tokens=1)
        (review,) = review_session(journal, "cc")
        assert (review.refused_rules, review.marker_id, review.marker_status) == (
            ("C3", "C5"),
            None,
            "none",
        )
        (rule,) = review.not_evidenced
        assert (rule.kind, rule.raised_at_turn, review.occupancy) == ("constraint", 1, 10)


def _with_claude_md(*, resent_before_reply: bool) -> Script:
    """A session whose CLAUDE.md Claude Code re-sends after the boundary: before its
    first reply, or (``False``) only after it."""
    s = Script()
    claude_md = {
        "type": "instructions",
        "files": [
            {"path": "/home/u/proj/CLAUDE.md", "type": "Project", "content": "- Never push."}
        ],
    }
    s.entry("attachment", attachment=claude_md)
    s.user("Tidy the readme.")
    s.assistant(s.text("Done."), prompt=1_000)
    s.boundary(1_020, "The readme was tidied.")
    if resent_before_reply:
        s.entry("attachment", attachment=claude_md)
    s.user("thanks")
    s.assistant(s.text("You're welcome."), prompt=300)
    if not resent_before_reply:
        s.entry("attachment", attachment=claude_md)
    return s


class TestResent:
    def test_a_rule_claude_code_re_sent_is_not_lost_and_the_review_says_so(
        self, tmp_path: Path
    ) -> None:
        """CLAUDE.md's rule, back before the first reply, is "re-sent by Claude Code"."""
        path = _with_claude_md(resent_before_reply=True).write(tmp_path / "t.jsonl")
        with eventstore.open(tmp_path / "j.db") as journal:
            sid = eventstore.ingest(journal, path).session_id
            (review,) = review_session(journal, sid)
        (rule,) = review.obligations
        assert (rule.key, rule.evidenced, review.not_evidenced) == (
            "CLAUDE.md: Never push.",
            False,
            (),
        )
        assert rule.line().ok
        assert rule.verdict.startswith("re-sent by Claude Code at v")

    def test_a_copy_sent_after_the_first_reply_is_no_evidence(self, tmp_path: Path) -> None:
        """The reply was written without the rule: it stays NOT evidenced."""
        path = _with_claude_md(resent_before_reply=False).write(tmp_path / "t.jsonl")
        with eventstore.open(tmp_path / "j.db") as journal:
            sid = eventstore.ingest(journal, path).session_id
            (review,) = review_session(journal, sid)
        assert [(o.key, o.verdict) for o in review.not_evidenced] == [
            ("CLAUDE.md: Never push.", "NOT evidenced")
        ]
