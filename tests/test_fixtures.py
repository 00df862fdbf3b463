"""The test data: the project's own files only, listed with how each was made."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tests import transcripts

TESTS = Path(__file__).resolve().parent
# Built from parts so that this file does not match itself (nor any scan for the path).
_SHARED = "sha" + "red"
OUTSIDE = re.compile(re.escape("/work/" + _SHARED))  # an absolute path to it
QUOTED = re.compile(r"""["']""" + _SHARED + r"""["']""")  # the folder as a path component


class TestOnlyOurOwnData:
    def test_no_committed_file_is_a_copy_of_the_real_transcripts(self) -> None:
        """No file under tests/ has the bytes of a file of the real-transcript folder."""
        theirs = {
            hashlib.sha256(p.read_bytes()).hexdigest()
            for p in (transcripts.REAL_DIR.glob("*") if transcripts.REAL_DIR.is_dir() else [])
        }
        ours = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in TESTS.rglob("*.jsonl*")}
        assert [ours[d].name for d in theirs & ours.keys()] == []

    def test_the_real_transcripts_are_named_in_one_module(self) -> None:
        """Only tests/transcripts.py says where the real transcripts are, and not by an
        absolute path."""
        named = [p.name for p in TESTS.rglob("*.py") if QUOTED.search(_code(p))]
        assert named == ["transcripts.py"]
        assert [p.name for p in TESTS.rglob("*.py") if OUTSIDE.search(_code(p))] == []

    def test_every_claude_code_fixture_is_listed_with_how_it_was_made(self) -> None:
        """Each file in tests/data/claude-code is in its README's table."""
        readme = (transcripts.DATA / "README.md").read_text()
        files = sorted(p.name for p in transcripts.DATA.glob("*.jsonl"))
        assert files == sorted(p.name for p in transcripts.GENERATED)
        assert [f for f in files if f"`{f}`" not in readme] == []

    def test_every_committed_file_is_under_one_megabyte(self) -> None:
        """Fixtures stay small enough to commit."""
        big = [p.name for p in (TESTS / "data").rglob("*") if p.stat().st_size >= 1_000_000]
        assert big == []


def _code(path: Path) -> str:
    """A module's text without this module's own pattern-building lines."""
    text = path.read_text(encoding="utf-8")
    return "" if path.name == "test_fixtures.py" else text
