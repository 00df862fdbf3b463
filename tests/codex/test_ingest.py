"""Codex rollouts through ``tierlog ingest``, ``audit`` and ``report`` (in-process)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import eventstore
from eventstore.cli import main
from eventstore.codex import ingest, is_rollout
from reducers import MarkerRefused, Noted
from tests.codex.conftest import FIXTURE

SESSION = "01a2344d-cd06-7272-ac49-f5fd38530698"  # the fixture's session_meta id


class TestIngest:
    def test_a_rollout_is_detected_and_its_compaction_reviewed(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``ingest`` without ``--format`` reads the rollout; ``audit`` exits 1 naming the
        failed ``cat`` the compaction dropped and the rule its kept history evidences."""
        db = str(tmp_path / "agent.db")
        assert main(["ingest", db, str(FIXTURE)]) == 0
        assert "18 turns, 3 calls (2 failed), 1 interrupted" in capsys.readouterr().out
        assert main(["audit", db]) == 1
        audit = capsys.readouterr().out
        assert "compaction_input line 31" in audit
        assert "'exec_command: cat' (failed) is missing" in audit
        assert "NOT evidenced negative_fact 'exec_command: cat'" in audit
        assert "evidenced     constraint 'heuristic: Never modify files under /etc.'" in audit

    def test_the_journal_holds_the_compaction_and_the_refused_marker(self, tmp_path: Path) -> None:
        """One tier-1 node over everything before the ``compacted`` line; its marker is
        refused (M2) and the failed call stays a live negative fact."""
        with eventstore.open(tmp_path / "agent.db") as journal:
            result = ingest(journal, FIXTURE)
            session = journal.session(SESSION)
            (node,) = session.state.nodes.values()
            refused = [e for e in session.events() if isinstance(e, MarkerRefused)]
        assert (node.tier, node.covers_lo, node.covers_hi) == (1, 0, 7_120)
        assert [sorted({v.rule for v in r.violations}) for r in refused] == [["M2"]]
        assert any("compaction_input" in w for w in result.warnings)

    def test_every_note_is_a_noted_event(self, tmp_path: Path) -> None:
        """The reader's and the mapping's notes are in the journal, in line order."""
        with eventstore.open(tmp_path / "agent.db") as journal:
            result = ingest(journal, FIXTURE)
            noted = [e for e in journal.session(SESSION).events() if isinstance(e, Noted)]
        assert [(n.kind, n.line, n.count) for n in noted] == [("compaction_input", 31, 1)]
        assert [(n.kind, n.line) for n in result.notes] == [("compaction_input", 31)]

    def test_ingesting_again_changes_nothing(self, tmp_path: Path) -> None:
        """A second ingest of the same rollout is ``unchanged``."""
        with eventstore.open(tmp_path / "agent.db") as journal:
            first = ingest(journal, FIXTURE)
            again = ingest(journal, FIXTURE)
        assert again.unchanged
        assert again.events == first.events

    def test_a_claude_code_transcript_is_not_a_rollout(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``--format codex`` on something else exits 2 and writes no journal."""
        db = tmp_path / "agent.db"
        other = tmp_path / "other.jsonl"
        other.write_text('{"type": "user", "message": {"role": "user", "content": "hi"}}\n')
        assert main(["ingest", str(db), str(other), "--format", "codex"]) == 2
        assert "no session_meta line: not a Codex rollout" in capsys.readouterr().err
        assert not db.exists()

    def test_report_draws_an_ingested_rollout(self, tmp_path: Path) -> None:
        """``report`` writes its HTML page for a Codex session."""
        db, page = str(tmp_path / "agent.db"), tmp_path / "report.html"
        assert main(["ingest", db, str(FIXTURE)]) == 0
        assert main(["report", db, SESSION, "-o", str(page)]) == 0
        assert SESSION in page.read_text()


class TestRealRollout:
    def test_the_public_rollout_counted_by_hand(self, real: Path, tmp_path: Path) -> None:
        """battle-cities (Codex 0.142.4, no compaction): 33 turns (a preamble, 11 messages,
        13 calls, 8 outputs), 3 failed outputs (two sandbox errors at lines 13-14, exit
        code 1 at line 31) on 2 keys, 5 calls the file ends before (lines 46-50); the 5
        encrypted reasoning items and the 8 outcomes read from text are notes."""
        with eventstore.open(tmp_path / "agent.db") as journal:
            result = ingest(journal, real)
            state = journal.session(result.session_id).state
        assert (result.turns, result.calls, result.failed) == (33, 13, 3)
        assert len(state.open_calls) == 5
        assert {k: f.disposition for k, f in state.dispositions.items()} == {
            "shell_command: Get-Content": "failed",
            "shell_command: Get-ChildItem": "failed",
        }
        assert result.warnings == (
            "line 8: reasoning_unread: reasoning without a readable summary (encrypted):"
            " passed over (5 items)",
            "line 13: outcome_from_text: a call's outcome read from its output text (no"
            " exit-code event) (8 items)",
        )
        assert state.occupancy >= 24_350  # the last token_count: 24,018 + 332


class TestDetect:
    def test_a_fifo_is_not_sniffed_and_nothing_hangs(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Detecting the format of a FIFO nobody writes to returns at once: not a rollout."""
        fifo = tmp_path / "pipe.jsonl"
        os.mkfifo(fifo)
        assert not is_rollout(fifo)
        assert main(["ingest", str(tmp_path / "agent.db"), str(fifo)]) == 2
        assert "not a regular file" in capsys.readouterr().err
