"""``tierlog report``: the command writes one HTML file, and bad input exits 2."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import eventstore
from eventstore.cli import main
from tests.helpers import fill, new_session


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


def _data(page: str) -> list[dict[str, object]]:
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
