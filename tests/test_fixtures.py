"""The test suite is self-contained: fixtures live in tests/data, with licence and provenance."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tests import transcripts

TESTS = Path(__file__).resolve().parent
# Built from parts so that this file does not match itself (nor any scan for the path).
_SHARED = "sha" + "red"
OUTSIDE = re.compile(
    "|".join(
        [
            re.escape("../" + _SHARED),
            re.escape("/work/" + _SHARED),
            r"""["']""" + _SHARED + r"""["']\s*(?:/|,|\))""",  # a quoted path component
        ]
    )
)


class TestSelfContained:
    @pytest.mark.parametrize("module", sorted(TESTS.rglob("*.py")), ids=lambda p: p.name)
    def test_no_test_module_reads_outside_the_repository(self, module: Path) -> None:
        """No test module names the shared folder beside the clone."""
        found = OUTSIDE.findall(module.read_text(encoding="utf-8"))
        assert found == [], f"{module.name} refers to files outside the repository: {found}"

    def test_the_pattern_catches_the_old_path(self) -> None:
        """The check recognises the way the transcript tests used to find their data."""
        old = "DATA = ROOT.parent / " + f'"{_SHARED}"' + ' / "data"'
        assert OUTSIDE.search(old)
        assert OUTSIDE.search(f"open('../{_SHARED}/data/x.jsonl')")
        assert not OUTSIDE.search('db = tmp_path / "shared.db"')


class TestTranscriptFixtures:
    def test_licence_and_provenance_sit_beside_the_data(self) -> None:
        """The MIT licence and a README naming the source repository are committed."""
        assert "MIT License" in (transcripts.DATA / "LICENSE").read_text()
        assert "marot/spotter" in (transcripts.DATA / "README.md").read_text()

    def test_every_fixture_is_listed_with_its_original_sha256(self) -> None:
        """Each data file is in the README table, and its (decompressed) bytes match it."""
        readme = (transcripts.DATA / "README.md").read_text()
        files = sorted(p for p in transcripts.DATA.iterdir() if p.suffix in (".jsonl", ".gz"))
        assert len(files) == 4
        for path in files:
            row = next(line for line in readme.splitlines() if f"`{path.name}`" in line)
            digest = hashlib.sha256(transcripts.text_of(path).encode("utf-8")).hexdigest()
            assert digest in row, path.name

    def test_every_committed_file_is_under_one_megabyte(self) -> None:
        """Fixtures stay small enough to commit."""
        big = [p.name for p in (TESTS / "data").rglob("*") if p.stat().st_size >= 1_000_000]
        assert big == []
