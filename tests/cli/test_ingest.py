"""``tierlog ingest``: a journal that exists takes each transcript where its last ingest
got to; a journal that does not is created only when some file reads whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventstore.claude_code import _ingest
from eventstore.claude_code._ingest import Loaded
from eventstore.cli import _ingest as cli_ingest
from eventstore.cli import main
from tests.claude_code.test_resume import _lines, _session


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _refuse_whole_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(path: str | Path, format: str = "claude-code") -> Loaded:  # noqa: A002
        raise AssertionError(f"{path} was read whole")

    monkeypatch.setattr(_ingest, "load", refused)
    monkeypatch.setattr(cli_ingest, "load", refused)


class TestIncremental:
    def test_a_grown_transcript_is_read_from_where_the_last_ingest_got_to(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The second ``tierlog ingest`` of a grown file reads only its new lines, and the
        journal verifies."""
        s, path, db = _session(), tmp_path / "t.jsonl", str(tmp_path / "j.db")
        path.write_text(_lines(s, 6))
        assert run(capsys, "ingest", db, str(path))[0] == 0
        path.write_text(_lines(s, len(s.lines)))
        _refuse_whole_reads(monkeypatch)
        code, out, _ = run(capsys, "ingest", db, str(path), "--json")
        assert code == 0
        (result,) = json.loads(out)
        assert result["appended_after"] > 0
        assert run(capsys, "verify", db)[0] == 0

    def test_a_bad_file_into_no_journal_creates_none(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Every file is read before a journal is created: one that is no transcript
        leaves no journal behind (exit 2)."""
        bad = tmp_path / "bad.jsonl"
        bad.write_text("not json\n")
        db = tmp_path / "j.db"
        code, _, err = run(capsys, "ingest", str(db), str(bad))
        assert code == 2
        assert "error" in err
        assert not db.exists()

    def test_a_bad_file_into_a_journal_writes_nothing_for_it(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Into a journal that exists, a file that is no transcript is an error (exit 2) and
        the good file beside it is ingested."""
        s, good, bad = _session(), tmp_path / "t.jsonl", tmp_path / "bad.jsonl"
        good.write_text(_lines(s, len(s.lines)))
        bad.write_text("not json\n")
        db = str(tmp_path / "j.db")
        run(capsys, "ingest", db, str(good))
        code, _, err = run(capsys, "ingest", db, str(bad), str(good), "--json")
        assert code == 2
        assert "bad.jsonl" in err
        assert run(capsys, "sessions", db)[1].count("s-1") == 1
