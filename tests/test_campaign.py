"""The reliability campaign of issue 27, counted: random tampers carried, FIFOs given as
every file argument, a full disk under every ``-o``, URLs of other schemes with
secrets, and PostgreSQL restarted under a writer. ``make test`` runs a slice of each;
``make fuzz`` (``TIERLOG_CAMPAIGN=long``) the whole, printing the counts.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import eventstore
from eventstore._ops import NotVerified, audit, export_lines, session_findings, ship
from eventstore._ops._transfer import import_file
from eventstore.cli import main
from tests import pgcluster
from tests.helpers import new_session
from tests.tampers import SID, _rows, behind, forge_chain, story
from tests.targets import BACKENDS, Target

ROOT = Path(__file__).resolve().parents[1]
LONG = os.environ.get("TIERLOG_CAMPAIGN") == "long"
TALLY: Counter[str] = Counter()  # printed at the end of the run (conftest.py)
COLUMNS = ("payload", "recorded_at", "hash", "prev_hash", "type", "version")


# -- tamper, then carry ------------------------------------------------------------------
def _mutate(target: Target, rng: random.Random) -> str:
    """One random edit of one row behind tierlog's back (the chain forged half the
    time); what was done, for the message."""
    rows = _rows(target, SID)
    seq, version, kind, _, payload, _ = rng.choice(rows)
    column = rng.choice(COLUMNS)
    value: Any
    if column == "payload":
        value = payload.replace(
            rng.choice(["0", "1", "2", "t", "e", '"', ","]), rng.choice("39x"), 1
        )
    elif column == "version":
        value = rng.choice([version + 1000, len(rows) + 1, max(1, version - 1)])
    elif column == "type":
        value = rng.choice(["TurnAppended", "Checkpointed", "Compacted", "Noted"])
    else:
        value = f"{rng.getrandbits(256):064x}" if column != "recorded_at" else "2020-01-01"
    try:
        behind(target, [(f"UPDATE events SET {column} = ? WHERE seq = ?", (value, seq))])
    except Exception:  # a UNIQUE version taken, a payload that is no JSON: nothing done
        return ""
    if rng.random() < 0.5:
        forge_chain(target)
    return f"v{version} {kind}.{column}"


def _laundered(journal: eventstore.Journal) -> bool:
    """Whether a destination shows the session as clean: it verifies and audits clean."""
    if session_findings(journal, SID):
        return False
    return not audit(journal, [SID]).findings


class TestTamperThenCarry:
    @pytest.mark.parametrize("backend", BACKENDS, indirect=True)
    @pytest.mark.parametrize("seed", range(120 if LONG else 3))
    def test_no_carrier_launders_a_tamper(
        self, target: Target, second_target: Target, tmp_path: Path, seed: int
    ) -> None:
        """For a random tamper verify detects, export refuses, ship refuses, and an
        export carried with --allow-findings imports only with it, its findings noted."""
        with eventstore.open(target.location, snapshot_every=5) as journal:
            story(journal)
        if not _mutate(target, random.Random(f"{target.backend}{seed}")):
            TALLY["tampers the database itself refused"] += 1
            return
        TALLY["tampers tried"] += 1
        with eventstore.open(target.location, readonly=True) as src:
            if not session_findings(src, SID):
                TALLY["tampers verify cannot see (content re-chained)"] += 1
                return
            TALLY["tampers verify reports"] += 1
            with pytest.raises(NotVerified):
                next(export_lines(src, SID))
            TALLY["export refusals"] += 1
            with eventstore.open(second_target.location) as dest:
                (shipped,) = ship(src, dest, [SID])
                assert shipped.problem is not None
                assert shipped.events == 0
                TALLY["ship refusals"] += 1
                self._carry(src, dest, tmp_path)

    def _carry(self, src: eventstore.Journal, dest: eventstore.Journal, tmp_path: Path) -> None:
        try:
            lines = list(export_lines(src, SID, allow_findings=True))
        except eventstore.JournalError:  # a row that is no event: cannot even be carried
            TALLY["exports impossible (a row that is no event)"] += 1
            return
        with pytest.raises(eventstore.JournalError):
            import_file(dest, lines)
        TALLY["imports refused without --allow-findings"] += 1
        try:
            import_file(dest, lines, allow_findings=True)
        except eventstore.InvalidEvent:  # rows that do not follow each other
            TALLY["carried imports refused as invalid"] += 1
            return
        assert not _laundered(dest)
        TALLY["carried imports with their findings noted"] += 1


# -- FIFOs ----------------------------------------------------------------------------------
FIFO_ARGVS = [
    ["import", "DB", "FIFO"], ["import", "FIFO", "DUMP"], ["verify", "DB", "--witness", "FIFO"],
    ["verify", "FIFO"], ["sessions", "FIFO"], ["log", "FIFO", "s"], ["state", "FIFO", "s"],
    ["diff", "FIFO", "s", "1", "2"], ["head", "FIFO"], ["audit", "FIFO"],
    ["sql", "FIFO", "SELECT 1"], ["export", "FIFO", "s"], ["export", "DB", "s", "-o", "FIFO"],
    ["report", "FIFO"], ["report", "DB", "-o", "FIFO"], ["spill", "FIFO", "s", "x"],
    ["ingest", "FIFO", "DUMP"], ["ingest", "NEW", "FIFO"], ["ship", "FIFO", "DB"],
    ["ship", "DB", "FIFO"], ["demo", "--db", "FIFO"],
]  # fmt: skip


@pytest.fixture(name="files")
def _files(tmp_path: Path) -> dict[str, str]:
    db, dump, fifo = tmp_path / "agent.db", tmp_path / "s.jsonl", tmp_path / "pipe"
    with eventstore.open(db) as journal:
        story(journal)
        dump.write_text("".join(line + "\n" for line in export_lines(journal, SID)))
    os.mkfifo(fifo)
    return {"DB": str(db), "DUMP": str(dump), "FIFO": str(fifo), "NEW": str(tmp_path / "n.db")}


class TestFifoArguments:
    @pytest.mark.parametrize("argv", FIFO_ARGVS if LONG else FIFO_ARGVS[:3], ids=" ".join)
    def test_a_fifo_never_blocks(self, files: dict[str, str], argv: list[str]) -> None:
        """A FIFO as any file argument: the command ends at once (exit 2), naming it,
        without reading from it."""
        argv = [files.get(a, a) for a in argv]
        TALLY["FIFO arguments tried"] += 1
        try:
            done = subprocess.run(
                [sys.executable, "-m", "eventstore", *argv],
                cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            TALLY["FIFO arguments that hung"] += 1
            raise
        assert done.returncode == 2, done.stderr
        assert "not a regular file" in done.stderr or "FIFO" in done.stderr, done.stderr
        TALLY["FIFO arguments refused at once"] += 1


# -- a full disk under every -o ----------------------------------------------------------
@pytest.fixture(name="big")
def _big(tmp_path: Path) -> str:
    """A journal whose export (about 120 KiB) and report pass every room tried."""
    with eventstore.open(tmp_path / "big.db") as journal:
        s = new_session(journal, SID)
        for i in range(300):
            s.append_turn("user", f"turn {i}: " + "x" * 300, 10)
    return str(tmp_path / "big.db")


class TestFullDisk:
    @pytest.mark.parametrize("command", ["export", "report"])
    @pytest.mark.parametrize("room_kib", [40, 56, 72, 96, 112] if LONG else [64])
    def test_no_output_is_partial(
        self, big: str, tmp_path: Path, command: str, room_kib: int
    ) -> None:
        """With the disk full at any point of the output, -o leaves no partial file."""
        out = tmp_path / "out" / "file"
        out.parent.mkdir()
        args = [command, big, SID, "-o", str(out)]
        limited = (
            "import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({room_kib * 1024}, {room_kib * 1024}))\n"
            "from eventstore.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", limited, *args],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        TALLY[f"{command} -o under a full disk"] += 1
        left = list(out.parent.iterdir())
        if done.returncode == 0:  # it fitted: the whole file
            assert left == [out]
            TALLY["outputs that fitted, whole"] += 1
            return
        assert done.returncode == 2, done.stderr
        TALLY["partial files left"] += len(left)
        assert left == []


# -- URLs with secrets ----------------------------------------------------------------------
SCHEMES = ["mysql", "postgresq", "postgresql+psycopg", "POSTGRESQL", "Postgres", "sqlite",
           "http", "postgresql", "postgres"]  # fmt: skip
SECRETS = ["hunter2", "p@ss:w0rd", "s%40cret", "pa ss", "'quoted'"]
URL_COMMANDS = [["sessions"], ["log", "s"], ["verify"], ["sql", "SELECT 1"], ["import", "F"],
                ["ship", "DEST"], ["report", "-o", "R"], ["export", "s"]]  # fmt: skip


class TestUrlRedaction:
    @pytest.mark.parametrize("seed", range(60 if LONG else 4))
    def test_no_secret_is_printed(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, seed: int,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:  # fmt: skip
        """A URL journal that cannot be opened (another scheme, a server that is not
        there): whatever the command prints, the password is not in it."""
        rng = random.Random(seed)
        monkeypatch.chdir(tmp_path)
        secret = rng.choice(SECRETS)
        host = rng.choice(["127.0.0.1:1", "localhost:1", "%2Fnowhere"])  # refused at once
        url = f"{rng.choice(SCHEMES)}://admin:{secret}@{host}/fleet"
        url += rng.choice(["", "?sslmode=require", f"?password={secret}&x=1"])
        for command in URL_COMMANDS:
            rest = [{"F": str(tmp_path / "f"), "DEST": str(tmp_path / "d.db"),
                     "R": str(tmp_path / "r.html")}.get(a, a) for a in command[1:]]  # fmt: skip
            main([command[0], url, *rest])
            out, err = capsys.readouterr()
            TALLY["URL commands tried"] += 1
            leaked = secret in out + err
            TALLY["secrets printed"] += leaked
            assert not leaked, out + err


# -- PostgreSQL restarted under a writer -------------------------------------------------------
@pytest.fixture(name="cluster")
def _cluster(restartable: pgcluster.Cluster) -> pgcluster.Cluster:
    return restartable


class TestRestarts:
    def test_a_writer_survives_restarts(self, cluster: pgcluster.Cluster) -> None:
        """A writer appends while the server restarts under it: every call either commits
        or fails with ConnectionLost; no acknowledged turn is lost; it verifies."""
        url = cluster.create_schema()
        restarts, done = (8 if LONG else 1), threading.Event()
        acknowledged: list[int] = []

        def restart() -> None:
            for _ in range(restarts):
                cluster.restart()
                TALLY["PostgreSQL restarts"] += 1
            done.set()

        with eventstore.open(url) as journal:
            s = new_session(journal)
            restarter = threading.Thread(target=restart)
            restarter.start()
            while not done.is_set() or len(acknowledged) < 50:
                try:
                    acknowledged.append(s.append_turn("user", "t", 1).index)
                except eventstore.ConnectionLost:
                    TALLY["calls failed with ConnectionLost"] += 1
            restarter.join()
            turns = [e.index for e in s.events() if isinstance(e, eventstore.TurnAppended)]
        TALLY["turns acknowledged across restarts"] += len(acknowledged)
        lost = sorted(set(acknowledged) - set(turns))
        TALLY["acknowledged turns lost"] += len(lost)
        assert lost == []
        with eventstore.open(url, readonly=True) as journal:
            assert session_findings(journal, "s") == []
