"""Attachments a hostile tester gave the reader: CLAUDE.md the reader cannot read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import eventstore
from reducers import Noted
from tests import transcripts


def _with_files(tmp_path: Path, files: object) -> tuple[Path, int]:
    """The pinned CLI's fixture with its first instructions attachment's ``files`` set to
    ``files``; and that attachment's line."""
    entries = [json.loads(x) for x in transcripts.NOTES.read_text().splitlines()]
    at, first = next(
        (n, e)
        for n, e in enumerate(entries, 1)
        if e.get("type") == "attachment" and e["attachment"].get("type") == "instructions"
    )
    first["attachment"]["files"] = files
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries))
    return path, at


def _notes(tmp_path: Path, path: Path) -> list[Noted]:
    with eventstore.open(tmp_path / "j.db") as journal:
        r = eventstore.ingest(journal, path)
        return [e for e in journal.session(r.session_id).events() if isinstance(e, Noted)]


class TestUnreadableInstructions:
    @pytest.mark.parametrize(
        "files",
        [
            [{"path": "/home/dev/notes-app/CLAUDE.md", "content": 5}],
            [{"path": None, "content": "- Never push to the main branch."}],
            "CLAUDE.md",
            None,
        ],
        ids=["content not text", "no path", "a string", "none"],
    )
    def test_a_file_it_cannot_read_is_a_note(self, tmp_path: Path, files: Any) -> None:
        """Its rules are lost: a bad_value note at the attachment's line says so, where
        before the CLAUDE.md rules vanished without a word."""
        path, at = _with_files(tmp_path, files)
        notes = [(n.kind, n.line) for n in _notes(tmp_path, path)]
        assert notes == [("bad_value", at)]

    def test_no_files_is_no_note(self, tmp_path: Path) -> None:
        """An attachment listing no file loses nothing."""
        path, _ = _with_files(tmp_path, [])
        assert _notes(tmp_path, path) == []
