"""SIGKILL in the middle of appends, refusals with spill, and imports loses nothing that
was committed and leaves a journal that verifies (orphan spill files are only noted)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import eventstore
from eventstore._ops._audit import verify
from eventstore._ops._transfer import export_lines
from eventstore._sqlite._recorder import SqliteRecorder
from tests.helpers import fill, refuse, refusing_session, rows

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 200 if os.environ.get("TIERLOG_CAMPAIGN") == "long" else 3
KINDS = ("appends", "refusals", "imports")
TALLY: Counter[str] = Counter()  # printed at the end of the run (conftest.py)


def _kill_after(argv: list[str], lines: int) -> list[str]:
    """Run a writer, read ``lines`` acknowledgements, SIGKILL it; what it acknowledged."""
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.writers", *argv], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    seen = [line.strip() for _, line in zip(range(lines), writer.stdout, strict=False)]
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    return seen


def _appends(db: Path, round_: int) -> None:
    SqliteRecorder(db).close()
    seen = _kill_after(["stream", str(db), "s"], 50 + 37 * (round_ % 10))
    assert SqliteRecorder(db).head("s").version >= int(seen[-1])
    TALLY["events acknowledged"] += int(seen[-1])


def _refusals(db: Path, round_: int) -> None:
    seen = _kill_after(["refusals", str(db), "r"], 2 + round_ % 7)
    with eventstore.open(db, readonly=True) as journal:
        s = journal.session("r")
        assert s.version >= int(seen[-1])
        for spill in s.state.spills:
            assert len(s.read_spill(spill)) == spill.bytes
        TALLY["refusals acknowledged"] += len(seen)
        TALLY["spills read back"] += len(s.state.spills)


def _imports(db: Path, round_: int) -> None:
    source = db.with_name("source.db")
    with eventstore.open(source) as journal:
        s = refusing_session(journal, "src")
        for _ in range(3):
            fill(s, 2)
            refuse(s)
        exported = db.with_name("src.jsonl")
        exported.write_text("".join(line + "\n" for line in export_lines(journal, "src")))
        length = s.version
    seen = _kill_after(["imports", str(db), str(exported)], 1 + round_ % 4)
    with eventstore.open(db, readonly=True) as journal:
        present = journal.sessions()
        assert set(seen) <= set(present)
        assert all(journal.session(sid).version == length for sid in present)  # whole or none
    TALLY["imports acknowledged"] += len(seen)


@pytest.mark.slow
class TestKillNine:
    @pytest.mark.parametrize("round_", range(ROUNDS))
    def test_killed_writer_leaves_a_sound_journal(self, tmp_path: Path, round_: int) -> None:
        """After kill -9: integrity_check ok, every acknowledged event is there, verify
        finds nothing but orphan spill files (the write before the commit)."""
        kind = KINDS[round_ % len(KINDS)]
        db = tmp_path / "crash.db"
        {"appends": _appends, "refusals": _refusals, "imports": _imports}[kind](db, round_)
        assert rows(db, "PRAGMA integrity_check") == [("ok",)]
        with eventstore.open(db, readonly=True) as journal:
            found = verify(journal)
        assert [f for f in found if f.fatal] == []
        TALLY[f"{kind} rounds"] += 1
        TALLY["orphan spill files noted"] += len(found)
