"""The no-regression rows of ``make bench`` (issue 26): what must stay as it was.

A commit's cost against the log's length (the median at 1k events is the floor;
the chart's series goes on to 1M), reopening a 1M-event session and appending,
the peak memory of a cold replay of it, and tierlog against the eventsourcing
library on the same workloads (it must stay ahead on every one).
"""

from __future__ import annotations

import itertools
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import eventstore
import reducers as r
from bench.common import content, median_rates, median_seconds, new_session
from bench.core import build, row, significant

ROOT = Path(__file__).resolve().parent.parent


def bound(name: str, value: float, unit: str, limit: float) -> dict[str, Any]:
    """A row with an absolute bound (no floor): ``ratio`` is limit/value, met at 1."""
    return {
        "row": name,
        "floor": None,
        "tierlog": significant(value),
        "unit": unit,
        "ratio": round(limit / value, 3) if value > 0 else float("inf"),
        "target": f"<= {limit:g} {unit}",
        "met": value <= limit,
    }


def commit_times(path: Path, commits: int) -> list[float]:
    """The time of each of ``commits`` more turns, in µs, on the session in ``path``."""
    with eventstore.open(path, synchronous="normal") as journal:
        s = journal.session("s")
        times = []
        for i in range(s.state.turns, s.state.turns + commits):
            began = time.perf_counter()
            s.append_turn("tool", content(i), 60)
            times.append((time.perf_counter() - began) * 1e6)
    return times


def history(files: dict[int, Path], quick: bool) -> dict[str, Any]:
    """Per-commit cost at each log length; the row compares 100k events to 1k.

    The lengths take turns, round by round, in many short rounds (a machine that slows
    down for a while would otherwise read as a cost that grows with the log): each
    point is the median of its commits over every round, the ratio the median of the
    rounds' ratios."""
    rounds, commits = (2, 100) if quick else (20, 150)
    sizes = sorted(files)
    times: dict[int, list[float]] = {n: [] for n in sizes}
    ratios = []
    at = sizes[min(len(sizes) - 1, 2)]  # 100k events against 1k (the chart goes on to 1M)
    for _ in range(rounds):
        medians = {}
        for n in sizes:
            spent = commit_times(files[n], commits)
            times[n] += spent
            medians[n] = statistics.median(spent)
        ratios.append(medians[at] / medians[sizes[0]])
    points = [[n, round(statistics.median(times[n]), 2)] for n in sizes]
    cost = statistics.median(ratios)
    first = points[0][1]
    return {
        "row": f"commit at {at:,} events / at {sizes[0]:,}",
        "floor": first,
        "tierlog": round(first * cost, 2),
        "unit": "µs",
        "ratio": round(1 / cost, 3),
        "target": "cost <= 1.2x",
        "met": round(cost, 3) <= 1.2,
        "series": {"label": "commit (append_turn, NORMAL)", "x": "log length", "points": points},
    }


def reopen(path: Path, quick: bool) -> dict[str, Any]:
    """Open the file, reopen the big session (snapshot + tail), append one turn."""
    with eventstore.open(path, readonly=True) as journal:
        events = journal.session("s").state.version

    def once() -> None:
        with eventstore.open(path, synchronous="normal") as journal:
            journal.session("s").append_turn("tool", "one more", 60)

    ms = median_seconds(once, 3 if quick else 7) * 1e3
    return bound(f"reopen + append, {events:,} events", ms, "ms", 50)


_MEMORY_PROBE = """
import sys, tracemalloc
sys.path.insert(0, {root!r})
import eventstore, reducers

def peak_kb():  # VmHWM: this process's peak RSS (reset by exec, unlike ru_maxrss)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0

session = eventstore.open({path!r}, readonly=True, snapshot_every=0).session("s")
before = peak_kb()
state = reducers.fold(session.events())
print(state.version, (peak_kb() - before) / 1024)
"""


def memory(path: Path) -> dict[str, Any]:
    """Peak RSS growth of a cold, checked replay (``Session.events()``), in a fresh process."""
    code = _MEMORY_PROBE.format(root=str(ROOT), path=str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    events, mb = out.stdout.split()
    return bound(f"replay memory, {int(events):,} events", float(mb), "MB", 100)


def peer(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    """tierlog and the eventsourcing library (SQLite, its defaults: WAL, synchronous
    FULL) on the same turn workload; none in quick mode or without the library."""
    try:
        from eventsourcing.application import Application
        from eventsourcing.domain import Aggregate, event
    except ImportError:
        return []
    if quick:
        return []

    class Transcript(Aggregate):  # type: ignore[misc, unused-ignore]
        @event("TurnAppended")  # type: ignore[untyped-decorator, unused-ignore]
        def append_turn(self, role: str, content: str, tokens: int) -> None:
            pass

    def app(name: str) -> Any:
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp / name)}
        return Application(env=env)

    es_one, es_many = app("es-one.db"), app("es-many.db")
    one, many = Transcript(), Transcript()
    es_one.save(one)
    es_many.save(many)
    ours_one, ours_many = (
        new_session(tmp, "peer-one", "full"),
        new_session(tmp, "peer-many", "full"),
    )
    turns = itertools.count()

    def es_single() -> int:
        for i in range(300):
            one.append_turn("tool", content(i), 60)
            es_one.save(one)
        return 300

    def ours_single() -> int:
        for _ in range(300):
            ours_one.append_turn("tool", content(next(turns)), 60)
        return 300

    def es_batches() -> int:
        for i in range(100_000):
            many.append_turn("tool", content(i), 60)
            if i % 1000 == 999:
                es_many.save(many)
        return 100_000

    def ours_batches() -> int:
        for _ in range(100):
            start = ours_many.state.turns
            ours_many.extend(
                r.TurnAppended(index=i, role="tool", content=content(i), tokens=60)
                for i in range(start, start + 1000)
            )
        return 100_000

    single = median_rates(ours_single, es_single, reps=5)
    batches = median_rates(ours_batches, es_batches, reps=1)
    read = median_rates(
        lambda: r.fold(ours_many.events()).version,
        lambda: es_many.repository.get(many.id).version,
        reps=5,
    )
    return [
        row("vs eventsourcing: a turn a commit (FULL)", single[1], single[0], "commits/s", 1.0),
        row("vs eventsourcing: 1000 turns a commit", batches[1], batches[0], "events/s", 1.0),
        row("vs eventsourcing: read 100k events", read[1], read[0], "events/s", 1.0),
    ]


def rows(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    """Every no-regression row, in the table's order."""
    sizes = (200, 1_000, 2_000) if quick else (1_000, 10_000, 100_000, 1_000_000)
    files = {n: build(tmp, f"history-{n}", n) for n in sizes}
    big = files[sizes[-1]]
    return [history(files, quick), reopen(big, quick), memory(big), *peer(tmp, quick)]
