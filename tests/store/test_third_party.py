"""The contract suite judges a backend it has never seen: a small in-memory one written
from tierlog's public names (``tests/store/memory.py``) passes the roles it
implements, and the same backend with one bug fails the contract test named for it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventstore.testing import EventLogContract, ReplayReadsContract, SnapshotStoreContract
from tests.store.memory import MemoryRecorder

ROOT = Path(__file__).resolve().parents[2]
THEIR_TESTS = """
import pytest
from eventstore.testing import EventLogContract, ReplayReadsContract, SnapshotStoreContract
from tests.store.memory import Forgetful


class TestForgetful(EventLogContract, ReplayReadsContract, SnapshotStoreContract):
    @pytest.fixture
    def recorder(self):
        recorder = Forgetful()
        yield recorder
        recorder.close()
"""


class TestMemoryRecorder(EventLogContract, ReplayReadsContract, SnapshotStoreContract):
    """The in-memory backend, through the three roles it implements."""

    @pytest.fixture(name="recorder")
    def _recorder(self) -> Iterator[MemoryRecorder]:
        recorder = MemoryRecorder()
        yield recorder
        recorder.close()


class TestTheSuiteJudges:
    def test_a_backend_whose_savepoints_keep_their_writes_fails(self, tmp_path: Path) -> None:
        """Run as a third party runs it (pytest on their own module, outside this
        repository and its conftest), the suite fails the backend whose failed savepoints
        keep their writes, naming the nested-transaction contract, and passes the rest."""
        (tmp_path / "test_theirs.py").write_text(THEIR_TESTS)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "."],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        failed = set(
            re.findall(r"^FAILED test_theirs\.py::TestForgetful::(\w+)", done.stdout, re.M)
        )
        assert done.returncode == 1, done.stdout + done.stderr
        assert "test_nested_transaction_rolls_back_only_itself" in failed
        passed = int(re.search(r"(\d+) passed", done.stdout).group(1))  # type: ignore[union-attr]
        assert passed > 3 * len(failed)
