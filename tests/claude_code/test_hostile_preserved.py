"""What Claude Code 2.1.3xx keeps verbatim after a summary (``preservedSegment``): the
audit compared with the transcript itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import eventstore
from eventstore.claude_code import _transcript as cc
from eventstore.claude_code._review import (
    BoundaryNote,
    CompactionReview,
    boundary_note,
    read_boundary_note,
)
from reducers import MarkerRefused, Noted
from tests import transcripts

README = "heuristic: Bitte ändere niemals die Datei README.md."


def _ingest(tmp_path: Path, path: Path) -> tuple[eventstore.IngestResult, list[Any]]:
    with eventstore.open(tmp_path / "j.db") as journal:
        r = eventstore.ingest(journal, path)
        return r, list(journal.session(r.session_id).events())


def _by_key(review: CompactionReview) -> dict[str, str]:
    return {o.key: o.verdict for o in review.obligations}


class TestKeptVerbatim:
    def test_the_fixture_keeps_the_german_rule_verbatim(self) -> None:
        """The premise, read from the file: the auto-compaction's preservedSegment runs from
        the reply before the German rule to the rule itself, the last message before it."""
        entries = [json.loads(x) for x in transcripts.NOTES.read_text().splitlines()]
        boundary = next(e for e in entries if e.get("subtype") == "compact_boundary")
        tail = boundary["compactMetadata"]["preservedSegment"]["tailUuid"]
        (kept,) = [e for e in entries if e.get("uuid") == tail]
        assert "Bitte ändere niemals die Datei README.md." in kept["message"]["content"]

    def test_a_rule_in_the_kept_turns_is_kept_not_dropped(self, tmp_path: Path) -> None:
        """The review says ``kept verbatim``, not ``NOT evidenced``, and the marker's refusal
        does not name it (the context Claude Code resumed from holds it)."""
        r, events = _ingest(tmp_path, transcripts.NOTES)
        auto = r.compactions[0]
        assert _by_key(auto)[README] == "kept verbatim"
        assert README not in {o.key for o in auto.not_evidenced}
        refusal = next(e for e in events if isinstance(e, MarkerRefused))
        assert refusal.node_id == auto.node_id
        assert "README" not in " ".join(v.message for v in refusal.violations)

    def test_a_later_summary_that_drops_it_is_still_flagged(self, tmp_path: Path) -> None:
        """The manual compaction keeps only the last reply: the rule it drops is flagged."""
        r, _ = _ingest(tmp_path, transcripts.NOTES)
        assert _by_key(r.compactions[1])[README] == "NOT evidenced"

    def test_a_2_0_transcript_has_nothing_kept(self, tmp_path: Path) -> None:
        """Claude Code 2.0.77 writes no preservedSegment: every turn counts as compacted."""
        r, _ = _ingest(tmp_path, transcripts.NOTES_2_0)
        assert all(o.verdict != "kept verbatim" for c in r.compactions for o in c.obligations)
        assert _by_key(r.compactions[0])[README] == "NOT evidenced"


class TestTheBoundaryNote:
    def test_it_records_how_many_turns_were_kept(self) -> None:
        """``keptTurns`` is written when turns were kept, and read back."""
        note = boundary_note(60, "auto", 190_036, 2)
        assert read_boundary_note(note) == BoundaryNote(
            line=60, trigger="auto", pre_tokens=190_036, kept=2
        )

    def test_a_note_without_kept_turns_reads_as_before(self) -> None:
        """Journals written before keep their notes: no ``keptTurns`` key, none kept."""
        note = boundary_note(60, "auto", 190_036)
        assert "keptTurns" not in note
        assert read_boundary_note(note) == BoundaryNote(line=60, trigger="auto", pre_tokens=190_036)


def _bad_segment(tmp_path: Path) -> Path:
    """The fixture with its auto-compaction's preservedSegment naming an entry off the file."""
    entries = [json.loads(x) for x in transcripts.NOTES.read_text().splitlines()]
    boundary = next(e for e in entries if e.get("subtype") == "compact_boundary")
    boundary["compactMetadata"]["preservedSegment"]["headUuid"] = "not-in-the-file"
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries))
    return path


class TestASegmentThatIsNotTheEnd:
    def test_every_turn_counts_as_compacted_with_a_note(self, tmp_path: Path) -> None:
        """A segment that is not the chain's last messages is not trusted: the rule is
        flagged as before, and a bad_value note at the boundary says why."""
        path = _bad_segment(tmp_path)
        boundary = next(i for i in cc.read(path).items if isinstance(i, cc.Boundary))
        r, events = _ingest(tmp_path, path)
        assert _by_key(r.compactions[0])[README] == "NOT evidenced"
        notes = [(e.kind, e.line) for e in events if isinstance(e, Noted)]
        assert notes == [("bad_value", boundary.line)]
