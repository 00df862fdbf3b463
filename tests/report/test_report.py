"""``tierlog report``: the command writes one HTML file, and bad input exits 2."""

from __future__ import annotations

import html
import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import eventstore
from eventstore.cli import main
from tests.helpers import behind_its_back, fill, new_session


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(name="db")
def _db(db_path: Path) -> Path:
    with eventstore.open(db_path) as journal:
        s = new_session(journal, "mig-42")
        fill(s, 4)
        s.truncate(0, 2, "budget")
        fill(new_session(journal, "other"), 1)
    return db_path


def _data(page: str) -> list[dict[str, Any]]:
    blocks = re.findall(r'<script type="application/json" class="data">(.*?)</script>', page, re.S)
    return [json.loads(b) for b in blocks]


class TestReportCommand:
    def test_writes_one_session_at_a_version(
        self, capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
    ) -> None:
        """-o names the file; the page holds that session, opening at --at."""
        out = tmp_path / "r.html"
        code, printed, _ = _run(capsys, "report", str(db), "mig-42", "--at", "3", "-o", str(out))
        assert code == 0
        assert f"wrote {out}" in printed
        (data,) = _data(out.read_text(encoding="utf-8"))
        assert (data["id"], data["at"], data["version"]) == ("mig-42", 3, 6)

    def test_default_file_holds_every_session(
        self, capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
    ) -> None:
        """Without SESSION and -o: DB stem + .html in the current folder, every session."""
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            assert _run(capsys, "report", str(db))[0] == 0
        finally:
            os.chdir(cwd)
        page = (tmp_path / f"{db.stem}.html").read_text(encoding="utf-8")
        assert [d["id"] for d in _data(page)] == ["mig-42", "other"]

    def test_dash_writes_to_standard_output(
        self, capsys: pytest.CaptureFixture[str], db: Path
    ) -> None:
        """-o - prints the page instead of writing a file."""
        code, out, _ = _run(capsys, "report", str(db), "other", "-o", "-")
        assert code == 0
        assert out.startswith("<!doctype html>")
        assert [d["id"] for d in _data(out)] == ["other"]

    @pytest.mark.parametrize("encoding", ["ascii", "cp1252", "latin-1", "utf-8"])
    def test_dash_writes_utf_8_whatever_the_terminal_encoding(
        self, monkeypatch: pytest.MonkeyPatch, db: Path, tmp_path: Path, encoding: str
    ) -> None:
        """-o - writes the same UTF-8 bytes as -o FILE, even to a stdout that cannot encode
        them (PYTHONIOENCODING=ascii) or would encode them otherwise (cp1252)."""
        with eventstore.open(db) as journal:
            journal.session("other").append_turn("user", "caf\u00e9 \u2192 \U0001f600", 3)
        out = tmp_path / "r.html"
        assert main(["report", str(db), "other", "-o", str(out)]) == 0
        raw = io.BytesIO()
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding=encoding))
        assert main(["report", str(db), "other", "-o", "-"]) == 0
        assert raw.getvalue() == out.read_bytes()
        assert "caf\u00e9 \u2192 \U0001f600" in raw.getvalue().decode("utf-8")

    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            (["nope"], "no session 'nope'"),
            (["mig-42", "--at", "99"], "outside 0..6"),
            (["--at", "2"], "--at needs a SESSION"),
        ],
    )
    def test_bad_input_exits_2_and_writes_nothing(
        self,
        capsys: pytest.CaptureFixture[str],
        db: Path,
        tmp_path: Path,
        argv: list[str],
        message: str,
    ) -> None:
        """An unknown session, a version outside the log, --at without SESSION: exit 2."""
        out = tmp_path / "r.html"
        code, _, err = _run(capsys, "report", str(db), *argv, "-o", str(out))
        assert (code, message in err, "Traceback" in err) == (2, True, False)
        assert not out.exists()

    def test_unwritable_output_exits_2(
        self, capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
    ) -> None:
        """A file that cannot be written is a clear error, not a traceback."""
        code, _, err = _run(capsys, "report", str(db), "-o", str(tmp_path / "no" / "r.html"))
        assert (code, "No such file or directory" in err) == (2, True)


def _tamper(db: Path, sql: str) -> None:
    """Edit the journal behind tierlog's back (its append-only triggers put back)."""
    with behind_its_back(db) as conn:
        conn.execute(sql)


_EDIT = (
    "UPDATE events SET payload = json_set(payload, '$.content', 'approved')"
    " WHERE session_id = 'mig-42' AND version = 3"
)


class TestTamperedJournal:
    @pytest.mark.parametrize(
        ("sql", "version", "problem"),
        [
            (_EDIT, 3, "hash does not match the event's content"),
            (
                "DELETE FROM events WHERE session_id = 'mig-42' AND version = 4",
                4,
                "version sequence broken: expected 4, found 5",
            ),
        ],
    )
    def test_a_broken_chain_is_drawn_with_a_warning_and_exits_1(
        self,
        capsys: pytest.CaptureFixture[str],
        db: Path,
        tmp_path: Path,
        sql: str,
        version: int,
        problem: str,
    ) -> None:
        """An edited or deleted row: the page is written, with a banner naming the session,
        the first bad version and why; stderr says so too; the exit code is 1."""
        _tamper(db, sql)
        out = tmp_path / "r.html"
        code, printed, err = _run(capsys, "report", str(db), "-o", str(out))
        assert (code, f"wrote {out}" in printed, "Traceback" in err) == (1, True, False)
        assert f"'mig-42' does not verify: its hash chain breaks at v{version} ({problem})" in err
        assert "'other'" not in err
        page = out.read_text(encoding="utf-8")
        assert "This journal does not verify" in page
        assert f"the hash chain breaks at <b>v{version}</b> ({html.escape(problem)})" in page
        assert page.count('class="tampered"') == 2  # the page's banner and the session's
        mig, other = _data(page)
        assert mig["chain"] == {"version": version, "problem": problem}
        assert other["chain"] is None

    def test_the_edited_text_is_drawn_after_the_break(
        self, capsys: pytest.CaptureFixture[str], db: Path
    ) -> None:
        """Every stored event is still drawn (the edited one too), to stdout with -o -."""
        _tamper(db, _EDIT)
        code, out, _ = _run(capsys, "report", str(db), "mig-42", "-o", "-")
        (data,) = _data(out)
        assert (code, data["version"], data["info"][1][2]) == (1, 6, "approved")

    def test_an_intact_journal_has_no_warning(
        self, capsys: pytest.CaptureFixture[str], db: Path
    ) -> None:
        """A journal that verifies: exit 0, no banner, no chain problem in the data."""
        code, out, err = _run(capsys, "report", str(db), "-o", "-")
        assert (code, err) == (0, "")
        assert 'class="tampered"' not in out
        assert [d["chain"] for d in _data(out)] == [None, None]

    def test_a_row_that_does_not_decode_exits_2(
        self, capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
    ) -> None:
        """A payload that is not the event's cannot be drawn: a clear error, no file."""
        _tamper(db, "UPDATE events SET payload = '{}' WHERE session_id = 'mig-42' AND version = 3")
        out = tmp_path / "r.html"
        code, _, err = _run(capsys, "report", str(db), "-o", str(out))
        assert (code, "malformed stored event" in err, "Traceback" in err) == (2, True, False)
        assert not out.exists()
