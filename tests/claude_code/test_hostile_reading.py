"""Lines a hostile tester gave the reader: a live file cut inside a character."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import eventstore
from eventstore.claude_code import _ingest
from eventstore.claude_code import _transcript as cc
from tests.transcripts import Script


def _payloads(db: Path, sid: str) -> list[tuple[str, str]]:
    with eventstore.open(db, readonly=True) as journal:
        return list(journal.recorder.read_payloads(sid))


def _write(s: Script, path: Path) -> Path:
    """The transcript as Claude Code writes it: UTF-8, not ASCII escapes."""
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in s.lines))
    return path


def _german() -> Script:
    s = Script()
    s.user("Räum bitte auf. Ändere niemals die Datei README.md.")
    s.assistant(s.text("Gut, ich räume auf."), prompt=900, output=12)
    s.user("Danke schön, und lösche nichts.")
    s.assistant(s.text("Erledigt."), prompt=950, output=4)
    return s


class TestCutInsideACharacter:
    def test_a_last_line_cut_inside_a_character_is_a_warning(self, tmp_path: Path) -> None:
        """A file read while Claude Code writes a line, between the bytes of one character,
        ingests what comes before it and warns, as a cut between characters does."""
        whole = _write(_german(), tmp_path / "whole.jsonl").read_bytes()
        cut = whole.index("ö".encode()) + 1  # inside the two bytes of "ö" on the last line
        part = tmp_path / "part.jsonl"
        part.write_bytes(whole[:cut])
        t = cc.read(part)
        assert t.warnings == ("line 3: truncated or malformed last line skipped",)
        assert sum(isinstance(i, cc.Message) for i in t.items) == 2

    def test_then_the_whole_file_appends_its_new_part(self, tmp_path: Path) -> None:
        """Ingested cut, then whole: grown, event for event what a fresh ingest gives."""
        path = _write(_german(), tmp_path / "live.jsonl")
        whole = path.read_bytes()
        path.write_bytes(whole[: whole.index("ö".encode()) + 1])
        with eventstore.open(tmp_path / "g.db") as journal:
            first = eventstore.ingest(journal, path)
            path.write_bytes(whole)
            grown = eventstore.ingest(journal, path)
        with eventstore.open(tmp_path / "f.db") as journal:
            eventstore.ingest(journal, path)
        assert grown.appended_after == first.events < grown.events
        stored = _payloads(tmp_path / "g.db", "s-1")
        plan = _ingest.load(path).plan
        assert stored == _ingest._fresh("s-1", plan, _ingest._slots(stored)).payloads

    def test_bytes_that_are_not_utf8_before_the_last_line_are_refused(self, tmp_path: Path) -> None:
        """Only the last line may be cut: a bad byte earlier is still an error naming it."""
        whole = _write(_german(), tmp_path / "whole.jsonl").read_bytes()
        at = whole.index("ä".encode()) + 1
        path = tmp_path / "bad.jsonl"
        path.write_bytes(whole[:at] + whole[at + 1 :])
        with pytest.raises(eventstore.InvalidEvent, match=r"^line 1: not UTF-8 text$"):
            cc.read(path)
