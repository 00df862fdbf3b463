"""tierlog benchmarks: each path against its physical floor, measured in the same run.

Usage: python bench/run.py [--quick] [--out bench/results.json]

Floors use the standard library only and the store's row shape (a plain table
with the same columns). The "schema floor" column repeats the floor on tierlog's
own DDL (UNIQUE(session_id, version), CHECK(json_valid), the turn index), to
show what the schema itself costs. Rates are medians of several repetitions;
the machine is noisy, so read ratios, not single times.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import eventstore  # noqa: E402
import reducers as r  # noqa: E402
from bench.common import (  # noqa: E402
    CONFIG,
    INSERT,
    PLAIN_DDL,
    content,
    floor_db,
    median_rates,
    median_seconds,
    new_session,
    plain_events,
    result,
    rows_for,
)
from eventstore._ops._audit import verify  # noqa: E402
from eventstore._sqlite._schema import TABLES  # noqa: E402


def per_commit(tmp: Path, sync: str, n: int, reps: int) -> dict[str, Any]:
    """One turn per commit, checks on, vs one BEGIN IMMEDIATE ... COMMIT per row."""
    s = new_session(tmp, f"commit-{sync}", sync)
    rows = rows_for(plain_events(n * reps))
    floor = floor_db(tmp / f"floor-commit-{sync}.db", sync)
    schema = floor_db(tmp / f"schema-commit-{sync}.db", sync, TABLES)

    turns = itertools.count()

    def ours() -> int:
        for _ in range(n):
            s.append_turn("tool", content(next(turns)), 60)
        return n

    def raw(conn: sqlite3.Connection) -> Callable[[], int]:
        it = iter(rows)

        def go() -> int:
            for _ in range(n):
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(INSERT, next(it))
                conn.execute("COMMIT")
            return n

        return go

    rates = median_rates(ours, raw(floor), raw(schema), reps=reps)
    return result(
        *rates,
        unit="commits/s",
    )


def bulk(tmp: Path, n: int, reps: int) -> dict[str, Any]:
    """Session.extend of n plain events (validated, hashed) vs one executemany."""
    batches = [plain_events(n, start_turn=0) for _ in range(reps)]
    rows = rows_for(batches[0])
    count = iter(range(reps))

    def ours() -> int:
        s = new_session(tmp, f"bulk-{next(count)}", "normal")
        s.extend(batches[0])
        return n

    def raw(ddl: tuple[str, ...], tag: str) -> Callable[[], int]:
        reps_left = iter(range(reps))

        def go() -> int:
            conn = floor_db(tmp / f"floor-bulk-{tag}-{next(reps_left)}.db", "normal", ddl)
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(INSERT, rows)
            conn.execute("COMMIT")
            return n

        return go

    rates = median_rates(ours, raw((PLAIN_DDL,), "p"), raw(TABLES, "s"), reps=reps)
    return result(
        *rates,
        unit="events/s",
    )


def build(tmp: Path, name: str, n: int, chunk: int = 100_000) -> Path:
    """A journal with one session of about n events, written in checked batches."""
    path = tmp / f"{name}.db"
    with eventstore.open(path, synchronous="normal") as journal:
        s = journal.start_session("s", CONFIG)
        while s.state.version < n:
            size = min(chunk, n - s.state.version)
            s.extend(plain_events(size, start_turn=s.state.turns))
    return path


def replay(path: Path, reps: int) -> dict[str, Any]:
    """Cold fold of every event from the file vs a streaming read with json.loads a row
    (and, for honesty, with orjson.loads a row)."""
    journal = eventstore.open(path, snapshot_every=0)
    s = journal.session("s")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def ours() -> int:
        return r.fold(s.events()).version

    def floor() -> int:
        n = 0
        for (payload,) in conn.execute("SELECT payload FROM events ORDER BY seq"):
            json.loads(payload)
            n += 1
        return n

    rates = median_rates(ours, floor, *_orjson_floor(conn), reps=reps)
    return _with_orjson(result(rates[0], rates[1], None, unit="events/s"), rates)


def _orjson_floor(conn: sqlite3.Connection) -> list[Callable[[], int]]:
    """The read floor with orjson.loads instead of json.loads (none without orjson)."""
    try:
        import orjson
    except ImportError:
        return []

    def floor() -> int:
        n = 0
        for (payload,) in conn.execute("SELECT payload FROM events ORDER BY seq"):
            orjson.loads(payload)
            n += 1
        return n

    return [floor]


def _with_orjson(row: dict[str, Any], rates: list[float]) -> dict[str, Any]:
    if len(rates) > 2:
        row["orjson_floor"] = round(rates[2])
        row["ratio_orjson"] = round(rates[0] / rates[2], 3)
    return row


def history_cost(tmp: Path, big: Path, reps: int) -> dict[str, Any]:
    """Per-commit time with 1k vs 100k events of history: median, and mean (snapshots in)."""
    small = build(tmp, "history-1k", 1_000)

    def commit_times(path: Path) -> list[float]:
        s = eventstore.open(path, synchronous="normal").session("s")
        times = []
        for i in range(s.state.turns, s.state.turns + 1_000 * reps):
            t = time.perf_counter()
            s.append_turn("tool", content(i), 60)
            times.append(time.perf_counter() - t)
        return times

    at_1k, at_big = commit_times(small), commit_times(big)
    ratio = statistics.median(at_big) / statistics.median(at_1k)
    return {
        "at_1k_us": round(statistics.median(at_1k) * 1e6, 1),
        "at_100k_us": round(statistics.median(at_big) * 1e6, 1),
        "mean_at_1k_us": round(statistics.fmean(at_1k) * 1e6, 1),
        "mean_at_100k_us": round(statistics.fmean(at_big) * 1e6, 1),
        "ratio": round(ratio, 3),
        "target": "<= 1.2",
        "met": ratio <= 1.2,
    }


def reopen(path: Path, reps: int) -> dict[str, Any]:
    """Open the file, reopen the big session (snapshot + tail), append one turn."""
    with eventstore.open(path, readonly=True) as journal:
        events = journal.session("s").state.version

    def once() -> None:
        with eventstore.open(path, synchronous="normal") as journal:
            s = journal.session("s")
            s.append_turn("tool", "one more", 60)

    ms = median_seconds(once, reps) * 1e3
    return {"events": events, "median_ms": round(ms, 1), "target": "<= 50 ms", "met": ms <= 50}


_MEMORY_PROBE = """
import sys, tracemalloc
sys.path.insert(0, {root!r})
import reducers
from eventstore._store._codec import from_payload
from eventstore._sqlite._recorder import SqliteRecorder

def peak_kb():  # VmHWM: this process's peak RSS (reset by exec, unlike ru_maxrss)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0

store = SqliteRecorder({path!r}, readonly=True)
before = peak_kb()
state = reducers.fold(from_payload(t, p) for t, p in store.read_payloads("s"))
rss = (peak_kb() - before) / 1024
del state
tracemalloc.start()
state = reducers.fold(from_payload(t, p) for t, p in store.read_payloads("s"))
heap = tracemalloc.get_traced_memory()[1] / 2**20
print(state.version, rss, heap)
"""


def memory(path: Path) -> dict[str, Any]:
    """Peak RSS growth (and Python heap peak) of a cold replay, in a fresh process."""
    code = _MEMORY_PROBE.format(root=str(ROOT), path=str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    events, rss, heap = out.stdout.split()
    return {
        "events": int(events),
        "peak_growth_mb": round(float(rss), 1),
        "python_heap_peak_mb": round(float(heap), 1),
        "target": "<= 100 MB",
        "met": float(rss) <= 100,
    }


def verify_rate(path: Path, reps: int) -> dict[str, Any]:
    """verify (chain walk + full re-derivation) vs the read+decode floor."""
    journal = eventstore.open(path, readonly=True)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    version = journal.session("s").state.version

    def ours() -> int:
        assert verify(journal, ["s"]) == []
        return version

    def floor() -> int:
        return sum(1 for (p,) in conn.execute("SELECT payload FROM events") if json.loads(p))

    rates = median_rates(ours, floor, *_orjson_floor(conn), reps=reps)
    return _with_orjson(result(rates[0], rates[1], None, unit="events/s"), rates)


# -- the peer ----------------------------------------------------------------------------
def peer(tmp: Path, n: int, reps: int) -> dict[str, Any] | str:
    """tierlog and the eventsourcing library (SQLite, its defaults: WAL, synchronous FULL)
    on the same turn workload: one event per commit, 1000 per commit, a long stream read."""
    try:
        from eventsourcing.application import Application
        from eventsourcing.domain import Aggregate, event
    except ImportError:
        return "eventsourcing not installed (pip install .[bench]): peer skipped"

    class Transcript(Aggregate):  # type: ignore[misc]
        @event("Started")  # type: ignore[untyped-decorator]
        def __init__(self) -> None:
            pass

        @event("TurnAppended")  # type: ignore[untyped-decorator]
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

    def es_single() -> int:
        for i in range(n):
            one.append_turn("tool", content(i), 60)
            es_one.save(one)
        return n

    turns = itertools.count()

    def ours_single() -> int:
        for _ in range(n):
            ours_one.append_turn("tool", content(next(turns)), 60)
        return n

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

    rows = {
        "one_event_per_commit": median_rates(ours_single, es_single, reps=reps),
        "1000_events_per_commit": median_rates(ours_batches, es_batches, reps=1),
        "read_100k_stream": median_rates(
            lambda: r.fold(ours_many.events()).version,
            lambda: es_many.repository.get(many.id).version,
            reps=reps,
        ),
    }
    return {
        name: {"tierlog": round(a), "eventsourcing": round(b), "ratio": round(a / b, 3)}
        for name, (a, b) in rows.items()
    }


# -- main --------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()
    big_n = 100_000 if args.quick else 1_000_000
    mid_n = 20_000 if args.quick else 100_000
    reps = 3 if args.quick else 5
    with tempfile.TemporaryDirectory(dir=os.environ.get("TIERLOG_BENCH_DIR")) as d:
        tmp = Path(d)
        results = run_all(tmp, big_n, mid_n, reps)
    results["meta"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "quick": args.quick,
        "orjson": _orjson_version(),
        "reps": reps,
    }
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))
    print(f"\nwritten to {args.out}")


def _orjson_version() -> str | None:
    """orjson's version when it is installed (then tierlog uses it), else None."""
    try:
        import orjson
    except ImportError:
        return None
    return str(orjson.__version__)


def say(what: str) -> None:
    print(f"... {what}", file=sys.stderr, flush=True)


def run_all(tmp: Path, big_n: int, mid_n: int, reps: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    say("per-commit appends")
    out["commit_normal"] = per_commit(tmp, "NORMAL", 500, reps)
    out["commit_full"] = per_commit(tmp, "FULL", 200, reps)
    say("bulk import")
    out["bulk"] = bulk(tmp, mid_n, reps)
    say(f"building {mid_n:,} and {big_n:,} event sessions")
    mid, big = build(tmp, "mid", mid_n), build(tmp, "big", big_n)
    say("replay")
    out[f"replay_{mid_n // 1000}k"] = replay(mid, reps)
    out[f"replay_{big_n // 1000}k"] = replay(big, max(2, reps // 2))
    say("commit cost vs history")
    out["history"] = history_cost(tmp, mid, reps)
    say("reopen")
    out["reopen_append"] = reopen(big, reps)
    say("memory")
    out["replay_memory"] = memory(big)
    say("verify")
    out["verify"] = verify_rate(mid, max(2, reps // 2))
    say("eventsourcing peer")
    out["peer_eventsourcing"] = peer(tmp, 300, reps)
    say("PostgreSQL (a throwaway cluster)")
    from bench.pg import run_pg

    found = run_pg(quick=big_n < 1_000_000, reps=reps)
    out.update(found if isinstance(found, dict) else {"postgres": found})
    return out


TARGETS = {  # issue 15: ratios against the stdlib floors of the same run
    "commit_normal": 0.6,
    "commit_full": 0.9,
    "bulk": 0.6,
    "replay_100k": 1.0,
    "replay_1000k": 1.0,
    "replay_20k": 1.0,
    "verify": 0.5,
    "pg_commit_full": 0.5,
    "pg_commit_normal": 0.5,
    "pg_bulk": 0.5,
}


def render(results: dict[str, Any]) -> str:
    lines = [
        f"{'path':<16} {'tierlog':>10} {'floor':>10} {'schema floor':>13} {'ratio':>7}"
        f"  {'target':<10} unit"
    ]
    for name, row in results.items():
        if not isinstance(row, dict) or "ratio" not in row or "floor" not in row:
            continue
        target = TARGETS.get(name)
        mark = (
            ""
            if target is None
            else (f">= {target}" + (" ok" if row["ratio"] >= target else " MISS"))
        )
        schema = format(row["schema_floor"], ",") if "schema_floor" in row else ""
        lines.append(
            f"{name:<16} {row['tierlog']:>10,} {row['floor']:>10,} {schema:>13}"
            f" {row['ratio']:>7.3f}  {mark:<10} {row['unit']}"
        )
        if "orjson_floor" in row:  # the same path against the read + orjson.loads floor
            lines.append(
                f"{'  vs orjson':<16} {row['tierlog']:>10,} {row['orjson_floor']:>10,}"
                f" {'':>13} {row['ratio_orjson']:>7.3f}  {'':<10} {row['unit']}"
            )
    h, ro, m = results["history"], results["reopen_append"], results["replay_memory"]
    lines.append(
        f"history          commit at 1k {h['at_1k_us']} us, at 100k {h['at_100k_us']} us:"
        f" ratio {h['ratio']} (target {h['target']}){'' if h['met'] else ' MISS'};"
        f" means {h['mean_at_1k_us']} / {h['mean_at_100k_us']} us"
    )
    lines.append(
        f"reopen+append    {ro['median_ms']} ms on a {ro['events']:,}-event session"
        f" (target {ro['target']})"
        f"{'' if ro['met'] else ' MISS'}"
    )
    lines.append(
        f"replay memory    +{m['peak_growth_mb']} MB peak RSS ({m['python_heap_peak_mb']} MB"
        f" Python heap) for {m['events']:,} events"
        f" (target {m['target']}){'' if m['met'] else ' MISS'}"
    )
    lines += _peer_lines(results["peer_eventsourcing"])
    from bench.pg import render as render_pg

    lines += render_pg(results if "pg_scaling" in results else str(results.get("postgres", "")))
    return "\n".join(lines)


def _peer_lines(peer_rows: dict[str, Any] | str) -> list[str]:
    if isinstance(peer_rows, str):
        return ["", peer_rows]
    lines = [
        "",
        f"{'vs eventsourcing (FULL)':<24} {'tierlog':>10} {'eventsourcing':>14} {'ratio':>7}",
    ]
    for name, row in peer_rows.items():
        lines.append(
            f"{name:<24} {row['tierlog']:>10,} {row['eventsourcing']:>14,} {row['ratio']:>7.3f}"
        )
    return lines


if __name__ == "__main__":
    main()
