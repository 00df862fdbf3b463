"""Two OS processes writing one session: optimistic concurrency end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eventstore._sqlite._recorder import SqliteRecorder
from eventstore._store._chain import check_chain
from tests.helpers import rows

ROOT = Path(__file__).resolve().parents[2]


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.writers", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
class TestTwoProcesses:
    def test_versions_are_dense_and_unique(self, tmp_path: Path) -> None:
        """Both writers finish; versions are exactly 1..n; no 'database is locked' escapes."""
        db = tmp_path / "shared.db"
        SqliteRecorder(db).close()
        per_writer = 300
        writers = [_spawn("contend", str(db), "s", name, str(per_writer)) for name in "ab"]
        for w in writers:  # both loaded and connected: they start together
            assert w.stdout is not None
            assert w.stdout.readline().strip() == "ready"
        Path(f"{db}.go").touch()
        results = [w.communicate(timeout=120) for w in writers]
        for w, (_, err) in zip(writers, results, strict=True):
            assert w.returncode == 0, err
            assert "locked" not in err
        versions = [v for (v,) in rows(db, "SELECT version FROM events ORDER BY version")]
        assert versions == list(range(1, 2 * per_writer + 1))
        assert sum(int(out) for out, _ in results) > 0, "the writers never collided"
        calls = rows(db, "SELECT count(DISTINCT payload ->> '$.call_id') FROM events")
        assert calls == [(2 * per_writer,)]
        assert check_chain(SqliteRecorder(db), "s") is None


@pytest.mark.slow
class TestCreation:
    @pytest.mark.parametrize("trial", range(3))
    def test_a_journal_being_created_is_never_something_else(
        self, tmp_path: Path, trial: int
    ) -> None:
        """Six processes open one new file at once, half of them read-only: a reader
        that comes too early sees no journal, never "a SQLite database of something
        else" (its marks and tables are read in one snapshot); no writer fails."""
        db = tmp_path / f"new-{trial}.db"
        openers = [_spawn("opens", str(db), "ro" if k % 2 else "rw", "0.4") for k in range(6)]
        for opener in openers:
            assert opener.stdout is not None
            assert opener.stdout.readline().strip() == "ready"
        Path(f"{db}.go").touch()
        said = [(k % 2, opener.communicate(timeout=60)) for k, opener in enumerate(openers)]
        for readonly, (out, err) in said:
            assert err == ""
            errors = out.splitlines()
            if readonly:
                assert set(errors) <= {
                    f"JournalError: no journal at {db}",
                    "JournalError: not a tierlog journal (an empty or foreign SQLite database)",
                }
            else:
                assert errors == []
