"""The contract suite judges a backend it has never seen: a small in-memory one written
from tierlog's public names (``tests/store/memory.py``) passes the roles it
implements, and the same backend with one bug fails the contract test named for it."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventstore.testing import EventLogContract, ReplayReadsContract, SnapshotStoreContract
from tests.store.memory import MemoryRecorder

ROOT = Path(__file__).resolve().parents[2]
# Each backend's bug, and the contract test that must fail for it.
CAUGHT_BY = {
    "Forgetful": "test_nested_transaction_rolls_back_only_itself",  # (c) a failed savepoint
    "Dropping": "test_a_released_savepoint_commits_with_its_transaction",  # (c) a released one
    "Misnested": "test_savepoints_nest",  # (c) savepoints in savepoints
    "Ignorant": "test_expected_version_mismatch_writes_nothing",  # (a) the expected version
    "Duplicating": "test_insert_refuses_a_version_already_stored",  # (a) the unique key
    "ByText": "test_read_payloads_come_in_version_order",  # (b) rows out of order
    "Stale": "test_another_writers_commit_moves_the_head",  # (d) a stale head
    "Writable": "test_query_refuses_writes_and_nothing",  # (e) UPDATE through query
}
MEMORY_ROLES = "EventLogContract, ReplayReadsContract, SnapshotStoreContract"
THEIR_TESTS = f"""
import pytest
from eventstore.testing import AuditReadsContract, {MEMORY_ROLES}
from tests.store import memory
from tests.store.writable import Writable


def _memory_test(backend):
    class Test({MEMORY_ROLES}):
        @pytest.fixture
        def recorder(self):
            recorder = backend()
            yield recorder
            recorder.close()

        @pytest.fixture
        def another_recorder(self, recorder):
            another = recorder.another()
            yield another
            another.close()

    return Test


for name in {sorted(CAUGHT_BY.keys() - {"Writable"})}:
    globals()["Test" + name] = _memory_test(getattr(memory, name))


class TestWritable(AuditReadsContract):
    @pytest.fixture
    def recorder(self, tmp_path):
        recorder = Writable(tmp_path / "journal.db")
        yield recorder
        recorder.close()
"""


class TestMemoryRecorder(EventLogContract, ReplayReadsContract, SnapshotStoreContract):
    """The in-memory backend, through the three roles it implements, with a second
    recorder on the same memory as another writer."""

    @pytest.fixture(name="recorder")
    def _recorder(self) -> Iterator[MemoryRecorder]:
        recorder = MemoryRecorder()
        yield recorder
        recorder.close()

    @pytest.fixture(name="another_recorder")
    def _another_recorder(self, recorder: MemoryRecorder) -> Iterator[MemoryRecorder]:
        another = recorder.another()
        yield another
        another.close()


@functools.cache
def _their_run() -> tuple[int, dict[str, set[str]], dict[str, int]]:
    """Run the suite as a third party does (pytest on their own module, outside this
    repository and its conftest) against every backend with a bug: the exit code, and
    per backend its failed tests and how many passed."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "test_theirs.py").write_text(THEIR_TESTS)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "."],
            cwd=folder,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    failed: dict[str, set[str]] = {name: set() for name in CAUGHT_BY}
    passed = dict.fromkeys(CAUGHT_BY, 0)
    for backend, test, outcome in re.findall(
        r"^test_theirs\.py::Test(\w+)::(\w+)(?:\[.*?\])? (PASSED|FAILED|ERROR|SKIPPED)",
        done.stdout,
        re.M,
    ):
        if outcome in ("FAILED", "ERROR"):
            failed[backend].add(test)
        passed[backend] += outcome == "PASSED"
    return done.returncode, failed, passed


class TestTheSuiteJudges:
    @pytest.mark.parametrize("backend", sorted(CAUGHT_BY))
    def test_a_backend_with_one_bug_fails_the_test_named_for_it(self, backend: str) -> None:
        """Run as a third party runs it, the suite fails each backend with a bug under
        the contract test named for that bug, and passes most of the rest."""
        returncode, failed, passed = _their_run()
        assert returncode == 1
        assert CAUGHT_BY[backend] in failed[backend], failed[backend]
        assert passed[backend] > 3 * len(failed[backend])
