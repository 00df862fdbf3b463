"""The main chain through every entry type, its fallback, and the notes the journal keeps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import eventstore
from eventstore.claude_code import _transcript as cc
from eventstore.claude_code._ingest import load
from eventstore.claude_code._review import CompactionReview
from eventstore.cli import main
from reducers import Noted
from tests import transcripts


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


def _talk(path: Path) -> list[dict[str, Any]]:
    """The file's user and assistant entries."""
    return [e for e in _entries(path) if e.get("type") in ("user", "assistant")]


def _ingest(tmp_path: Path, path: Path) -> tuple[Path, eventstore.IngestResult]:
    db = tmp_path / "j.db"
    with eventstore.open(db) as journal:
        return db, eventstore.ingest(journal, path)


def _notes(db: Path, sid: str) -> list[Noted]:
    with eventstore.open(db) as journal:
        return [e for e in journal.session(sid).events() if isinstance(e, Noted)]


def cc_turns(path: Path) -> int:
    """The turns ingesting ``path`` gives (read and mapped, not written)."""
    return load(path).plan.turns


def _near(review: CompactionReview) -> bool:
    """The occupancy before the compaction is within 5% of its preTokens."""
    pre = review.pre_tokens
    return pre is not None and abs(review.occupancy - pre) <= 0.05 * pre


class TestEveryEntryType:
    @pytest.mark.parametrize("path", [transcripts.NOTES, transcripts.NOTES_2_0], ids=["2.1", "2.0"])
    def test_every_message_of_a_cli_transcript_is_read(self, path: Path) -> None:
        """Attachments in the parent chain leave no entry off it, and need no note."""
        t = cc.read(path)
        assert t.notes == ()
        assert t.warnings == ()
        assert sum(isinstance(i, cc.Boundary) for i in t.items) == 2

    def test_the_walk_crosses_attachments(self) -> None:
        """In the 2.1 file, user and assistant entries hang off attachment entries."""
        by_uuid = {e["uuid"]: e for e in _entries(transcripts.NOTES) if "uuid" in e}
        talk = [e for e in _talk(transcripts.NOTES) if e["parentUuid"] in by_uuid]
        parents = {by_uuid[e["parentUuid"]]["type"] for e in talk}
        assert "attachment" in parents

    @pytest.mark.parametrize("path", [transcripts.NOTES, transcripts.NOTES_2_0], ids=["2.1", "2.0"])
    def test_both_compactions_are_read_near_their_pre_tokens(
        self, tmp_path: Path, path: Path
    ) -> None:
        """The auto and the manual compaction; occupancy within 5% of preTokens at each."""
        _, r = _ingest(tmp_path, path)
        assert [c.trigger for c in r.compactions] == ["auto", "manual"]
        assert all(_near(c) for c in r.compactions)


class TestMissingLogicalParent:
    def test_falls_back_to_the_entry_before_the_boundary(self, tmp_path: Path) -> None:
        """Every turn before the boundary is read, occupancy is within 5% of preTokens,
        and the fallback is a note at the boundary's line."""
        db, r = _ingest(tmp_path, transcripts.MISSING_PARENT)
        assert r.turns == cc_turns(transcripts.NOTES)
        assert _near(r.compactions[0])
        (note,) = _notes(db, r.session_id)
        assert (note.kind, note.line) == ("chain_fallback", r.compactions[0].line)

    def test_audit_names_the_guess_on_the_session_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``tierlog audit`` exits 1, its session line saying the chain was joined by a guess."""
        db, r = _ingest(tmp_path, transcripts.MISSING_PARENT)
        assert main(["audit", str(db)]) == 1
        first = capsys.readouterr().out.splitlines()[0]
        assert first.startswith(f"== {r.session_id}: chain joined by a guess: ")


class TestBrokenChain:
    def test_audit_says_so_on_its_first_line_and_exits_1(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A parent in no entry: the session's first audit line says the chain was not read
        whole, and the notes name the line."""
        db, r = _ingest(tmp_path, transcripts.BROKEN_CHAIN)
        assert main(["audit", str(db)]) == 1
        out = capsys.readouterr().out
        assert out.splitlines()[0].startswith(f"== {r.session_id}: CHAIN NOT READ WHOLE: ")
        kinds = {n.kind for n in _notes(db, r.session_id)}
        assert {"chain_broken", "off_chain"} <= kinds

    def test_the_report_draws_the_notes(self, tmp_path: Path) -> None:
        """``tierlog report`` shows the chain warning and each note."""
        db, r = _ingest(tmp_path, transcripts.BROKEN_CHAIN)
        page = tmp_path / "r.html"
        main(["report", str(db), r.session_id, "-o", str(page)])
        html = page.read_text()
        assert "CHAIN NOT READ WHOLE" in html
        for note in _notes(db, r.session_id):
            assert note.kind in html

    def test_notes_are_in_the_sql_view(self, tmp_path: Path) -> None:
        """The ``ingest_notes`` view has one row per note, with its kind and line."""
        db, r = _ingest(tmp_path, transcripts.BROKEN_CHAIN)
        with (
            eventstore.open(db) as journal,
            journal.recorder.query(
                "SELECT kind, line FROM ingest_notes ORDER BY version", timeout=None
            ) as rows,
        ):
            got = [tuple(row) for row in rows.rows]
        assert got == [(n.kind, n.line) for n in _notes(db, r.session_id)]


class TestRealSessions:
    def test_a_missing_logical_parent_no_longer_loses_the_history(self, tmp_path: Path) -> None:
        """4d5611e5 (Claude Code 2.1.39): its boundary's logical parent is in no entry; the
        compaction is read over the turns before it, occupancy within 5% of preTokens."""
        _, r = _ingest(tmp_path, transcripts.real("4d5611e5-241a-462a-8d15-5122611a9569.jsonl"))
        (review,) = r.compactions
        assert review.turns_compacted > 100
        assert _near(review)

    def test_every_real_session_is_read_whole(self, tmp_path: Path) -> None:
        """No real session has a chain_broken or off_chain note; each boundary is near."""
        paths = transcripts.real_sessions()
        if not paths:
            pytest.skip("real transcripts not beside the clone (../shared/data/claude-code)")
        with eventstore.open(tmp_path / "all.db") as journal:
            for path in paths:
                r = eventstore.ingest(journal, path)
                assert all(_near(c) for c in r.compactions), path.name
                kinds = {
                    e.kind for e in journal.session(r.session_id).events() if isinstance(e, Noted)
                }
                assert not kinds & {"chain_broken", "off_chain"}, path.name
