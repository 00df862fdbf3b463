"""The report page's script and stylesheet: package data files, shipped and inlined as is."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import eventstore
from eventstore._report._collect import collect
from eventstore._report._html import CONTROL_CLASS, CSS, SCRIPT, render
from tests.helpers import fill, new_session

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO / "eventstore" / "_report"
_SOURCES = ("pyproject.toml", "README.md", "eventstore", "reducers", "invariants")
_CACHES = shutil.ignore_patterns("__pycache__", "*.pyc")


def _inline(page: str, tag: str) -> str:
    """The text of the page's one ``tag`` element that has no attributes."""
    (found,) = re.finditer(f"<{tag}>(.*?)</{tag}>", page, flags=re.S)
    return found.group(1)


class TestInlined:
    def test_the_page_holds_the_files_byte_for_byte(self, journal: eventstore.Journal) -> None:
        """The page's script and style are report.js and report.css, each after a newline."""
        fill(new_session(journal), 2)
        page = render(collect(journal))
        assert _inline(page, "script") == "\n" + (ASSETS / "report.js").read_text("utf-8")
        assert _inline(page, "style") == "\n" + (ASSETS / "report.css").read_text("utf-8")
        assert (_inline(page, "script"), _inline(page, "style")) == (SCRIPT, CSS)

    def test_the_script_escapes_the_characters_the_page_escapes(self) -> None:
        """report.js's CONTROLS is the character class of ``visible``, written out in full."""
        (written,) = re.findall(r"var CONTROLS = /\[(.*?)\]/g;", SCRIPT)
        assert written == CONTROL_CLASS

    @pytest.mark.parametrize("name", ["report.js", "report.css"])
    def test_the_files_are_plain_text(self, name: str) -> None:
        """ASCII, newline-terminated lines and no tabs: the file diffs cleanly and its CSP
        hash does not depend on the checkout's line endings."""
        data = (ASSETS / name).read_bytes()
        assert data.isascii()
        assert b"\r" not in data
        assert b"\t" not in data
        assert data.endswith(b"\n")


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None, reason="needs setuptools")
class TestShipped:
    def test_a_build_carries_the_files(self, tmp_path: Path) -> None:
        """A build from a clean copy of the sources (what ``pip install .`` lays out)
        carries report.js and report.css beside the report's modules."""
        for name in _SOURCES:
            if (REPO / name).is_dir():
                shutil.copytree(REPO / name, tmp_path / name, ignore=_CACHES)
            else:
                shutil.copy(REPO / name, tmp_path / name)
        build = [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q"]
        subprocess.run([*build, "build_py", "-d", "lib"], cwd=tmp_path, check=True, timeout=120)
        shipped = tmp_path / "lib" / "eventstore" / "_report"
        for name in ("report.js", "report.css"):
            assert (shipped / name).read_bytes() == (ASSETS / name).read_bytes()
