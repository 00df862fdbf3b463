"""Many processes writing one PostgreSQL journal at once, then every chain checked.

``make soak`` runs it for 30 s on its own throwaway cluster
(``python -m tests.pg_soak --seconds 30``); ``tests/postgres/test_pg_concurrency.py`` runs
a few seconds of it in ``make test``. Eight processes append turns to eight
sessions of their own; four more race on one shared session, each appending at
the version it read a moment before (a stale one is a ``ConcurrencyError``, and
it reads again and retries). Afterwards every session's versions must be exactly
``1..n``, each committed turn present once, and every hash chain intact.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

import eventstore
from eventstore._store._chain import check_chain
from tests.helpers import config

ROOT = Path(__file__).resolve().parent.parent
RACED = "raced"  # the one session every racing writer appends to


@attrs.frozen(kw_only=True)
class SoakResult:
    """What a soak run did and found."""

    seconds: float
    own_commits: int  # on the eight sessions of their own
    shared_commits: int  # on the one session four processes race on
    conflicts: int  # stale expected versions the racers were refused
    problems: tuple[str, ...]  # anything wrong with versions, turns or chains

    @property
    def commits_per_second(self) -> float:
        """Aggregate commits per second, all writers together."""
        return (self.own_commits + self.shared_commits) / self.seconds


def write(url: str, session_id: str, name: str, gate: str, seconds: float) -> None:
    """One writer process: say it is ready, wait for the gate to open, append for
    ``seconds``; print commits and conflicts."""
    race = session_id == RACED
    with eventstore.open(url, synchronous="normal") as journal:
        s = journal.session(session_id)
        Path(gate, f"{name}.ready").touch()
        while not Path(gate, "go").exists():
            time.sleep(0.002)
        deadline = time.monotonic() + seconds
        commits = conflicts = 0
        while time.monotonic() < deadline:
            content = f"{name}-{commits}"
            if not race:
                s.append_turn("tool", content, 1)
                commits += 1
                continue
            version = s.version
            time.sleep(random.random() / 500)  # decide on what was read, as a runtime would
            try:
                s.append_turn("tool", content, 1, expected_version=version)
                commits += 1
            except eventstore.ConcurrencyError:
                conflicts += 1
    print(json.dumps({"commits": commits, "conflicts": conflicts}), flush=True)


def soak(url: str, seconds: float, own: int = 8, racing: int = 4) -> SoakResult:
    """Run ``own`` + ``racing`` writer processes for ``seconds`` and check the result."""
    sessions = [f"own-{i}" for i in range(own)]
    with eventstore.open(url) as journal:
        for sid in [*sessions, RACED]:
            journal.start_session(sid, config())
    plan = [(sid, sid) for sid in sessions] + [(RACED, f"racer-{i}") for i in range(racing)]
    with tempfile.TemporaryDirectory() as gate:
        writer = [sys.executable, "-m", "tests.pg_soak", "write", url]
        procs = [
            subprocess.Popen(
                [*writer, sid, name, gate, str(seconds)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for sid, name in plan
        ]
        _open_gate(Path(gate), len(plan), procs)
        outputs = [p.communicate(timeout=seconds + 120) for p in procs]
    problems = [f"{name} exited {p.returncode}: {err.strip()[-300:]}" for p, (_, err), (_, name) in
                zip(procs, outputs, plan, strict=True) if p.returncode]  # fmt: skip
    counts: dict[str, list[dict[str, Any]]] = {}
    for (sid, _), (out, _) in zip(plan, outputs, strict=True):
        if out.strip():
            counts.setdefault(sid, []).append(json.loads(out))
    with eventstore.open(url, readonly=True) as journal:
        for sid in [*sessions, RACED]:
            problems += _check(journal, sid, sum(c["commits"] for c in counts.get(sid, [])))
    return SoakResult(
        seconds=seconds,
        own_commits=sum(c["commits"] for sid in sessions for c in counts.get(sid, [])),
        shared_commits=sum(c["commits"] for c in counts.get(RACED, [])),
        conflicts=sum(c["conflicts"] for c in counts.get(RACED, [])),
        problems=tuple(problems),
    )


def _open_gate(gate: Path, writers: int, procs: list[subprocess.Popen[str]]) -> None:
    """Wait until every writer is connected (or one has died), then let them all go."""
    deadline = time.monotonic() + 120
    while len(list(gate.glob("*.ready"))) < writers and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    (gate / "go").touch()


def _check(journal: eventstore.Journal, session_id: str, commits: int) -> list[str]:
    """Versions exactly 1..n, every committed turn once, and an intact chain."""
    rows = list(journal.recorder.read(session_id))
    problems = []
    if [r.version for r in rows] != list(range(1, len(rows) + 1)):
        problems.append(f"{session_id}: versions are not exactly 1..{len(rows)}")
    contents = [json.loads(r.payload)["content"] for r in rows if r.type == "TurnAppended"]
    if len(contents) != commits or len(set(contents)) != commits:
        problems.append(f"{session_id}: {len(contents)} turns, {commits} commits reported")
    if (broken := check_chain(journal.recorder, session_id)) is not None:
        problems.append(f"{session_id}: chain broken at v{broken.version}: {broken.problem}")
    return problems


def main() -> None:
    """``make soak``: start a throwaway cluster, soak it, print the result."""
    from tests.pgcluster import Cluster, missing

    parser = argparse.ArgumentParser(description="Soak a PostgreSQL journal with writers.")
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    if (reason := missing()) is not None:
        sys.exit(f"soak: no PostgreSQL here: {reason}")
    cluster = Cluster.start(settings=())  # the server's own durable defaults
    try:
        result = soak(cluster.create_database("soak"), args.seconds)
    finally:
        cluster.stop()
    print(
        f"{args.seconds:g} s, 8 writers on 8 sessions + 4 racing on one:"
        f" {result.own_commits:,} + {result.shared_commits:,} commits"
        f" ({result.commits_per_second:,.0f} commits/s),"
        f" {result.conflicts:,} stale versions refused and retried"
    )
    print("\n".join(result.problems) or "every session: versions 1..n, each turn once, chain ok")
    sys.exit(1 if result.problems else 0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["write"]:
        url, sid, name, gate, seconds = sys.argv[2:7]
        write(url, sid, name, gate, float(seconds))
    else:
        main()
