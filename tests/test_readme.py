"""The README's embedding example runs as printed."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


class TestReadme:
    def test_embedding_example_runs(self, tmp_path: Path) -> None:
        """The first python block runs in an empty folder and prints what its comments say."""
        code = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
        assert code is not None
        out = io.StringIO()
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code.group(1), "README.md", "exec"), {})
        finally:
            os.chdir(cwd)
        assert out.getvalue().splitlines() == ["['C5', 'C5']", "digest 950"]
        assert (tmp_path / "agent.db").exists()
        assert list((tmp_path / "agent.db.spills").iterdir())
