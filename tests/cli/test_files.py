"""Files named on the command line: only regular ones read (never blocking on a FIFO),
outputs written whole or not at all (a full disk leaves nothing partial)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import eventstore
from eventstore.cli._files import STALE_AFTER, _host, check_regular, open_regular, written
from reducers import InvalidArgument
from tests.helpers import new_session

ROOT = Path(__file__).resolve().parents[2]
ROOM = 64 * 1024  # past the journal's 32 KiB -shm file, short of the outputs
FULL_DISK = (  # the CLI in a child whose files may not grow past ROOM: EFBIG, as ENOSPC
    "import resource, signal, sys\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    f"resource.setrlimit(resource.RLIMIT_FSIZE, ({ROOM}, {ROOM}))\n"
    "from eventstore.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def tierlog(*argv: str, limited: bool = False) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process (a hang fails after 60 s instead of hanging)."""
    code = (
        FULL_DISK
        if limited
        else "import sys; from eventstore.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.fixture(name="db")
def _db(tmp_path: Path) -> Path:
    """A journal with one session whose export and report are larger than ROOM."""
    with eventstore.open(tmp_path / "agent.db") as journal:
        s = new_session(journal)
        for i in range(300):
            s.append_turn("user", f"turn {i}: " + "x" * 300, 10)
    return tmp_path / "agent.db"


class TestRegularFiles:
    def test_a_fifo_is_refused_without_blocking(self, tmp_path: Path) -> None:
        """Opening a FIFO nobody writes to returns at once with InvalidArgument."""
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        with pytest.raises(InvalidArgument, match=r"a named pipe \(FIFO\), not a regular file"):
            open_regular(str(fifo))

    @pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a device"), ("/", "a folder")])
    def test_devices_and_folders_are_refused(self, path: str, kind: str) -> None:
        """/dev/zero and a folder are named for what they are."""
        with pytest.raises(InvalidArgument, match=f"{kind}, not a regular file"):
            open_regular(path)
        with pytest.raises(InvalidArgument, match=kind):
            check_regular(path)

    def test_a_missing_file_is_one_line(self, tmp_path: Path) -> None:
        """A file that is not there: InvalidArgument with the OS's reason."""
        with pytest.raises(InvalidArgument, match="No such file"):
            open_regular(str(tmp_path / "nope"))
        check_regular(str(tmp_path / "nope"))  # missing is fine where a file is created

    @pytest.mark.parametrize(
        "argv",
        [
            ["import", "DB", "FIFO"],
            ["verify", "DB", "--witness", "FIFO"],
            ["sessions", "FIFO"],
            ["import", "FIFO", "DUMP"],
            ["ship", "FIFO", "DB"],
            ["ship", "DB", "FIFO"],
            ["export", "DB", "s", "-o", "FIFO"],
            ["report", "DB", "-o", "FIFO"],
        ],
        ids=["import FILE", "witness", "sessions DB", "import DB", "ship SRC", "ship DEST",
             "export -o", "report -o"],
    )  # fmt: skip
    def test_every_file_argument_that_is_a_fifo_exits_2_at_once(
        self, db: Path, tmp_path: Path, argv: list[str]
    ) -> None:
        """Whichever argument names a FIFO, the command exits 2 naming it; none blocks."""
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        dump = tmp_path / "s.jsonl"
        assert tierlog("export", str(db), "s", "-o", str(dump)).returncode == 0
        names = {"DB": str(db), "FIFO": str(fifo), "DUMP": str(dump)}
        done = tierlog(*[names.get(a, a) for a in argv])
        assert done.returncode == 2, done.stderr
        assert f"{fifo}: a named pipe (FIFO), not a regular file" in done.stderr


class TestWhole:
    def test_written_replaces_the_file_once_complete(self, tmp_path: Path) -> None:
        """The new bytes appear at once, with the old file's mode; no temporary file stays."""
        target = tmp_path / "out.txt"
        target.write_text("old")
        target.chmod(0o640)
        with written(target) as f:
            f.write(b"new")
            assert target.read_text() == "old"  # not yet
        assert (target.read_text(), target.stat().st_mode & 0o777) == ("new", 0o640)
        assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]

    def test_a_failure_leaves_the_old_file_and_no_temporary(self, tmp_path: Path) -> None:
        """An error in the block: the old file stays as it was, the temporary goes."""
        target = tmp_path / "out.txt"
        target.write_text("old")

        def fail() -> None:
            with written(target) as f:
                f.write(b"half")
                raise eventstore.JournalError("export failed (simulated)")

        with pytest.raises(eventstore.JournalError):
            fail()
        assert target.read_text() == "old"
        assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]

    @pytest.mark.parametrize(
        "argv",
        [["export", "DB", "s", "-o", "OUT"], ["report", "DB", "s", "-o", "OUT"]],
        ids=["export", "report"],
    )
    def test_a_full_disk_leaves_no_partial_output(
        self, db: Path, tmp_path: Path, argv: list[str]
    ) -> None:
        """With no room past 64 KiB, -o exits 2 naming the file; nothing partial is left,
        and an older output is kept whole."""
        out = tmp_path / "out" / "file"
        out.parent.mkdir()
        done = tierlog(*[{"DB": str(db), "OUT": str(out)}.get(a, a) for a in argv], limited=True)
        assert done.returncode == 2, done.stderr
        assert f"{out}: File too large" in done.stderr
        assert list(out.parent.iterdir()) == []
        out.write_text("the previous output")
        done = tierlog(*[{"DB": str(db), "OUT": str(out)}.get(a, a) for a in argv], limited=True)
        assert done.returncode == 2
        assert [p.read_text() for p in out.parent.iterdir()] == ["the previous output"]


STALLED = (  # the CLI in a child whose export stalls after its first lines are written
    "import sys, time\n"
    "import eventstore._ops as ops\n"
    "whole = ops.export_lines\n"
    "def stalled(*args, **kwargs):\n"
    "    lines = whole(*args, **kwargs)\n"
    "    yield next(lines)\n"
    "    yield next(lines)\n"
    "    print('writing', flush=True)\n"
    "    time.sleep(120)\n"
    "    yield from lines\n"
    "ops.export_lines = stalled\n"
    "from eventstore.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _age(path: Path, seconds: float) -> None:
    """Make ``path`` look untouched for ``seconds``."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def _stalled_export(db: Path, out: Path) -> subprocess.Popen[str]:
    """``tierlog export DB s -o OUT`` in a child, returned once it is writing OUT's
    temporary file (and stalled there)."""
    child = subprocess.Popen(
        [sys.executable, "-c", STALLED, "export", str(db), "s", "-o", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert child.stdout is not None
    assert child.stdout.readline() == "writing\n"
    return child


class TestKilled:
    def test_a_later_export_removes_what_a_killed_one_left(self, db: Path, tmp_path: Path) -> None:
        """``tierlog export -o`` killed with SIGKILL while it writes leaves its temporary
        file beside the output (nothing can remove it then); the next export of the same
        file removes it, and writes the whole output (before: it stayed for good, one
        more per killed export)."""
        out = tmp_path / "out" / "s.jsonl"
        out.parent.mkdir()
        child = _stalled_export(db, out)
        child.kill()
        child.wait()
        left = list(out.parent.iterdir())
        assert len(left) == 1
        assert left[0].name.startswith(".s.jsonl.")
        assert str(child.pid) in left[0].name
        done = tierlog("export", str(db), "s", "-o", str(out))  # too fresh to be judged
        assert done.returncode == 0, done.stderr
        assert set(out.parent.iterdir()) == {out, left[0]}
        _age(left[0], STALE_AFTER + 1)
        done = tierlog("export", str(db), "s", "-o", str(out))
        assert done.returncode == 0, done.stderr
        assert list(out.parent.iterdir()) == [out]
        assert out.read_text().count("\n") > 300

    def test_names_it_never_makes_are_left_alone(self, db: Path, tmp_path: Path) -> None:
        """A name of the shape but with a pid no kernel writes (0, zero-padded, beyond a
        C long or any pid) is neither removed nor a crash (an overflowing one was
        "internal error: OverflowError", on every export of that file)."""
        out = tmp_path / "out" / "s.jsonl"
        out.parent.mkdir()
        host = _host()
        names = [
            f".s.jsonl.{host}.{pid}.abcdefgh.tmp"
            for pid in ("0", "000", "0999999", "4294967296", "99999999999999999999")
        ]
        for name in names:
            (out.parent / name).write_text("not ours")
            _age(out.parent / name, STALE_AFTER + 1)
        done = tierlog("export", str(db), "s", "-o", str(out))
        assert done.returncode == 0, done.stderr
        assert {p.name for p in out.parent.iterdir()} == {*names, out.name}

    def test_a_live_writers_temporary_file_is_left_alone(self, db: Path, tmp_path: Path) -> None:
        """An export of the same file still running (its pid alive) keeps its temporary
        file while another one writes; and a file of that shape this did not make (another
        host's, another target's) is never removed."""
        out = tmp_path / "out" / "s.jsonl"
        out.parent.mkdir()
        other = [
            ".s.jsonl.elsewhere.999999999.abcdefgh.tmp",
            ".t.jsonl.x.999999999.abcdefgh.tmp",
            ".s.jsonl.tmp",
        ]
        for name in other:
            (out.parent / name).write_text("not ours")
            _age(out.parent / name, STALE_AFTER + 1)
        child = _stalled_export(db, out)
        try:
            (live,) = [p for p in out.parent.iterdir() if str(child.pid) in p.name]
            _age(live, STALE_AFTER + 1)  # old, but its writer runs
            assert tierlog("export", str(db), "s", "-o", str(out)).returncode == 0
            assert live.exists()
        finally:
            child.kill()
            child.wait()
        assert {p.name for p in out.parent.iterdir()} == {*other, live.name, out.name}
