"""SIGKILL in the middle of a stream of appends loses nothing that was committed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from eventstore._chain import check_chain
from eventstore._sqlite import SqliteRecorder
from tests.helpers import rows

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 40 if os.environ.get("TIERLOG_CAMPAIGN") == "long" else 3


@pytest.mark.slow
class TestKillNine:
    @pytest.mark.parametrize("round_", range(ROUNDS))
    def test_killed_writer_leaves_a_sound_journal(self, tmp_path: Path, round_: int) -> None:
        """After kill -9: integrity_check ok, chain verifies, every acknowledged event is there."""
        db = tmp_path / "crash.db"
        SqliteRecorder(db).close()
        writer = subprocess.Popen(
            [sys.executable, "-m", "tests.writers", "stream", str(db), "s"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        seen = 0
        for line in writer.stdout:
            seen = int(line)
            if seen >= 50 + 37 * round_:
                break
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        assert rows(db, "PRAGMA integrity_check") == [("ok",)]
        store = SqliteRecorder(db)
        assert check_chain(store, "s") is None
        assert store.head("s")[0] >= seen
