"""Queue operations a hostile tester gave the reader: operations it does not know."""

from __future__ import annotations

from pathlib import Path

import pytest

import eventstore
from reducers import Noted
from tests.transcripts import Script


def _script(operation: object) -> Script:
    s = Script()
    s.user("Fix the parser.")
    s.assistant(s.text("Working on it."), prompt=900)
    s.queue("and keep the tests green", taken=False)
    s.lines.append({"type": "queue-operation", "operation": operation, "sessionId": "s-1"})
    s.assistant(s.text("Done."), prompt=950)
    return s


def _notes(tmp_path: Path, s: Script) -> list[Noted]:
    with eventstore.open(tmp_path / "q.db") as journal:
        eventstore.ingest(journal, s.write(tmp_path / "q.jsonl"))
        return [e for e in journal.session("s-1").events() if isinstance(e, Noted)]


class TestUnknownOperations:
    @pytest.mark.parametrize("operation", ["popAll", None, 5])
    def test_an_operation_it_does_not_know_is_a_note(
        self, tmp_path: Path, operation: object
    ) -> None:
        """An operation other than enqueue, dequeue or remove is skipped with a ``queue``
        note naming it and its line, not silently."""
        s = _script(operation)
        (note,) = _notes(tmp_path, s)
        assert (note.kind, note.line) == ("queue", 4)
        assert repr(operation) in note.text

    @pytest.mark.parametrize("operation", ["enqueue", "dequeue", "remove"])
    def test_the_operations_claude_code_writes_need_no_note(
        self, tmp_path: Path, operation: str
    ) -> None:
        """enqueue (2.x), remove (2.1.3x) and dequeue (2.1.3xx) are read without a note."""
        s = _script(operation)
        s.lines[3]["content"] = "more"
        assert _notes(tmp_path, s) == []
