"""What the benchmarks share: the session they write, the floors' rows and DDL, timing."""

from __future__ import annotations

import sqlite3
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import eventstore
import reducers as r
from eventstore._store._codec import to_payload

CONFIG = eventstore.SessionConfig(
    window_tokens=200_000,
    trigger_tokens=160_000,
    truncator_unit="tokens",
    floor_span=24_000,
    floor_unit="tokens",
    on_unsafe="spill",
)
COLUMNS = "session_id, version, type, schema_version, payload, recorded_at, prev_hash, hash"
INSERT = f"INSERT INTO events ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
PLAIN_DDL = (
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, session_id TEXT, version INTEGER,"
    " type TEXT, schema_version INTEGER, payload TEXT, recorded_at TEXT, prev_hash TEXT,"
    " hash TEXT)"
)


# -- workload ------------------------------------------------------------------------------
def content(i: int) -> str:
    """A ~200-byte turn."""
    head = f"tool output {i}: grep -rn 'ALTER TABLE' migrations/ returned {i % 17} matches; "
    return (head + "lorem ipsum dolor sit amet " * 8)[:200]


def plain_events(n: int, start_turn: int = 0) -> list[r.Event]:
    """``n`` valid plain events (calls always resolved before the next opens)."""
    out: list[r.Event] = []
    turn, call = start_turn, 0
    while len(out) < n:
        if len(out) % 10 == 3 and len(out) + 2 <= n:
            out.append(r.CallOpened(call_id=f"c{start_turn}-{call}", kind="tool_call", name="g"))
            out.append(r.CallResolved(call_id=f"c{start_turn}-{call}", outcome="ok"))
            call += 1
        else:
            out.append(r.TurnAppended(index=turn, role="tool", content=content(turn), tokens=60))
            turn += 1
    return out


def rows_for(events: list[r.Event]) -> list[tuple[Any, ...]]:
    now = datetime.now(UTC).isoformat()
    return [
        ("s", v, type(e).__name__, 1, to_payload(e), now, "0" * 64, "f" * 64)
        for v, e in enumerate(events, 1)
    ]


# -- timing ------------------------------------------------------------------------------
def median_rates(*runs: Callable[[], int], reps: int) -> list[float]:
    """Median ``ops / seconds`` of each run (which returns its ops), over ``reps`` rounds.

    The runs alternate within each round, so drift on a noisy machine hits all alike.
    """
    rates: list[list[float]] = [[] for _ in runs]
    for _ in range(reps):
        for run, out in zip(runs, rates, strict=True):
            t = time.perf_counter()
            ops = run()
            out.append(ops / (time.perf_counter() - t))
    return [statistics.median(r) for r in rates]


def median_seconds(run: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def floor_db(path: Path, sync: str, ddl: tuple[str, ...] = (PLAIN_DDL,)) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {sync}")
    for statement in ddl:
        conn.execute(statement)
    return conn


def new_session(tmp: Path, name: str, sync: str) -> eventstore.Session:
    journal = eventstore.open(tmp / f"{name}.db", synchronous=sync)
    return journal.start_session("s", CONFIG)


# -- paths -------------------------------------------------------------------------------


def result(ours: float, floor: float, schema: float | None = None, *, unit: str) -> dict[str, Any]:
    out = {
        "tierlog": round(ours),
        "floor": round(floor),
        "ratio": round(ours / floor, 3),
        "unit": unit,
    }
    if schema is not None:
        out["schema_floor"] = round(schema)
    return out
