"""Rollouts of other shapes than Codex 0.171 writes, and rollouts that change between
ingests: what tierlog passes over or assumes is a ``Noted`` event, never silent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import eventstore
from eventstore import Journal
from eventstore.codex import ingest
from reducers import Noted
from tests.codex.lines import call, lines, msg, out

SESSION = "s-1"  # tests.codex.lines.META's id


@pytest.fixture(name="journal")
def _journal(tmp_path: Path) -> Iterator[Journal]:
    with eventstore.open(tmp_path / "agent.db") as journal:
        yield journal


def _write(path: Path, *rows: tuple[str, dict[str, Any]]) -> Path:
    path.write_bytes(lines(*rows))
    return path


def _noted(journal: Journal) -> list[tuple[str, int | None, int]]:
    events = journal.session(SESSION).events()
    return [(e.kind, e.line, e.count) for e in events if isinstance(e, Noted)]


ENCRYPTED = ("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"})
UNKNOWN = ("response_item", {"type": "web_search_call", "status": "completed"})


class TestGrownRollout:
    def test_the_notes_of_the_part_a_rollout_grew_by_are_recorded(
        self, journal: Journal, tmp_path: Path
    ) -> None:
        """Lines a live rollout gained after the first ingest that tierlog passes over
        are noted in the journal, though no new turn follows them."""
        start = [msg("user", "Fix the build."), call("c1", "make")]
        path = _write(tmp_path / "r.jsonl", *start)
        assert ingest(journal, path).notes == ()
        _write(path, *start, UNKNOWN, ENCRYPTED)
        grown = ingest(journal, path)
        assert not grown.unchanged
        assert _noted(journal) == [("unknown_type", 4, 1), ("reasoning_unread", 5, 1)]
        assert ingest(journal, path).unchanged

    def test_a_note_whose_count_grew_is_recorded_again(
        self, journal: Journal, tmp_path: Path
    ) -> None:
        """A note that folds several lines is recorded again when the rollout adds one."""
        start = [msg("user", "Fix the build."), ENCRYPTED, msg("assistant", "On it.")]
        path = _write(tmp_path / "r.jsonl", *start)
        ingest(journal, path)
        _write(path, *start, ENCRYPTED, call("c1", "make"), out("c1", "Exit code: 0"))
        ingest(journal, path)
        assert [n for n in _noted(journal) if n[0] == "reasoning_unread"] == [
            ("reasoning_unread", 3, 1),
            ("reasoning_unread", 3, 2),
        ]


class TestCompactionShapes:
    def test_an_encrypted_summary_is_noted(self, journal: Journal, tmp_path: Path) -> None:
        """A remote compaction (the OpenAI provider's) keeps its summary encrypted in
        ``replacement_history``: the review judges the kept messages alone, and says so."""
        kept = [msg("user", "Fix the build.")[1], {"type": "compaction", "encrypted_content": "x"}]
        path = _write(
            tmp_path / "r.jsonl",
            msg("user", "Fix the build."),
            call("c1", "make"),
            out("c1", "Exit code: 2"),
            ("compacted", {"message": "", "replacement_history": kept}),
        )
        result = ingest(journal, path)
        assert "summary_encrypted" in [n.kind for n in result.notes]
        assert ("summary_encrypted", 5, 1) in _noted(journal)
        (review,) = result.compactions
        assert [o.key for o in review.not_evidenced] == ["exec_command: make"]
