"""The core rows of ``make bench`` (issue 26): commits, bulk, replay, verify.

Each row is tierlog against a floor measured in the same process, the runs
alternating round by round (medians): per commit against the bare loop of its own
steps (``bench/ceiling.py``) and FULL also against the raw floor; bulk ``extend``
against one ``executemany``; a cold replay against a read that decodes with
orjson, and against a "checked" floor (the columns the link check reads, sha256 of
the hashed bytes, orjson: what the check itself costs); ``verify`` of one session
against a read with ``json.loads``, and ``verify --jobs 2`` against ``--jobs 1``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import eventstore
import reducers as r
from bench import ceiling
from bench.common import (
    CONFIG,
    INSERT,
    PLAIN_DDL,
    floor_db,
    median_rates,
    new_session,
    plain_events,
    rows_for,
)
from eventstore._ops._audit import verify
from eventstore._ops._jobs import Reopen
from eventstore._store._links import LINK_COLUMNS


def significant(value: float) -> float:
    """``value`` to 4 significant digits (a rate of millions, a time of milliseconds)."""
    return float(f"{value:.4g}")


def row(
    name: str, floor: float, ours: float, unit: str, target: float, *, rate: bool = True
) -> dict[str, Any]:
    """One table row: ``ratio`` is higher-is-better (ours/floor for a rate, floor/ours
    for a time), met when it reaches ``target``: the ratio as printed (three decimals),
    so that a row never reads 0.900 and MISSED."""
    ratio = round(ours / floor if rate else floor / ours, 3)
    return {
        "row": name,
        "floor": significant(floor),
        "tierlog": significant(ours),
        "unit": unit,
        "ratio": ratio,
        "target": f">= {target}x",
        "met": ratio >= target,
    }


# -- per commit ------------------------------------------------------------------------
def commits(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    """append_turn under NORMAL and FULL against the bare steps; FULL against raw too."""
    n, reps = (100, 3) if quick else (1000, 9)
    normal_ours, _, normal_steps = ceiling.per_commit(tmp, n, reps, "normal")
    full_ours, full_raw, full_steps = ceiling.per_commit(tmp, n // 2, reps, "full")
    return [
        row("append_turn NORMAL / bare steps", normal_steps, normal_ours, "commits/s", 0.9),
        row("append_turn FULL / bare steps", full_steps, full_ours, "commits/s", 0.9),
        row("append_turn FULL / raw floor", full_raw, full_ours, "commits/s", 0.9),
    ]


# -- bulk --------------------------------------------------------------------------------
def bulk(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    """Session.extend of n plain events (validated, hashed) vs one executemany."""
    n, reps = (2_000, 3) if quick else (100_000, 5)
    events = plain_events(n)
    rows = rows_for(events)
    made = itertools.count()

    def ours() -> int:
        new_session(tmp, f"bulk-{next(made)}", "normal").extend(events)
        return n

    def raw() -> int:
        conn = floor_db(tmp / f"floor-bulk-{next(made)}.db", "normal", (PLAIN_DDL,))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, rows)
        conn.execute("COMMIT")
        conn.close()
        return n

    rate, floor = median_rates(ours, raw, reps=reps)
    return [row("bulk extend / raw floor", floor, rate, "events/s", 0.5)]


# -- replay ------------------------------------------------------------------------------
def build(tmp: Path, name: str, n: int, chunk: int = 100_000) -> Path:
    """A journal with one session of about n events, written in checked batches."""
    path = tmp / f"{name}.db"
    with eventstore.open(path, synchronous="normal") as journal:
        s = journal.start_session("s", CONFIG)
        while s.state.version < n:
            size = min(chunk, n - s.state.version)
            s.extend(plain_events(size, start_turn=s.state.turns))
    return path


def replay(path: Path, quick: bool) -> list[dict[str, Any]]:
    """A cold fold of every event (each row checked to link) against the orjson floor
    and the checked floor."""
    import orjson

    journal = eventstore.open(path, snapshot_every=0, readonly=True)
    s = journal.session("s")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def ours() -> int:
        return r.fold(s.events()).version

    def floor() -> int:
        n = 0
        for (payload,) in conn.execute("SELECT payload FROM events ORDER BY seq"):
            orjson.loads(payload)
            n += 1
        return n

    rates = median_rates(ours, floor, _checked_floor(conn), reps=3 if quick else 7)
    journal.close()
    return [
        row("replay / orjson floor", rates[1], rates[0], "events/s", 0.6),
        row("replay / checked floor", rates[2], rates[0], "events/s", 0.6),
    ]


def _checked_floor(conn: sqlite3.Connection) -> Callable[[], int]:
    """The read floor plus what a link check needs: the same columns, sha256 of the
    hashed bytes (checked against the stored hash), orjson."""
    import orjson

    sql = f"SELECT {LINK_COLUMNS} FROM events WHERE session_id = 's' ORDER BY version"

    def floor() -> int:
        n, prev, sha = 0, "0" * 64, hashlib.sha256
        for type_name, schema, payload, at, digest in conn.execute(sql):
            n += 1
            body = (
                f'{prev}{{"payload":{payload},"recorded_at":"{at}","schema_version":{schema},'
                f'"session_id":"s","type":"{type_name}","version":{n}}}'
            )
            if sha(body.encode()).hexdigest() != digest:
                raise AssertionError(f"the checked floor's hash differs at {n}")
            orjson.loads(payload)
            prev = digest
        return n

    return floor


# -- verify ------------------------------------------------------------------------------
def verify_one(path: Path, quick: bool) -> list[dict[str, Any]]:
    """verify (chain walk + every decision re-derived) vs the read + json.loads floor."""
    journal = eventstore.open(path, readonly=True)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    version = journal.session("s").state.version

    def ours() -> int:
        if verify(journal, ["s"]) != []:
            raise AssertionError("the benchmark's journal does not verify")
        return version

    def floor() -> int:
        return sum(1 for (p,) in conn.execute("SELECT payload FROM events") if json.loads(p))

    ours_rate, floor_rate = median_rates(ours, floor, reps=3 if quick else 5)
    journal.close()
    return [row("verify one session / floor", floor_rate, ours_rate, "events/s", 0.5)]


def verify_jobs(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    """``verify`` of a journal of 8 sessions with 2 worker processes against 1."""
    path = tmp / "jobs.db"
    size = 500 if quick else 25_000
    with eventstore.open(path, synchronous="normal") as journal:
        for k in range(8):
            journal.start_session(f"s{k}", CONFIG).extend(plain_events(size))
    journal = eventstore.open(path, readonly=True)
    times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(1 if quick else 3):
        for jobs, spent in times.items():
            began = time.perf_counter()
            if verify(journal, None, jobs=jobs, reopen=Reopen(str(path))):
                raise AssertionError("the benchmark's journal does not verify")
            spent.append(time.perf_counter() - began)
    journal.close()
    one, two = statistics.median(times[1]), statistics.median(times[2])
    return [row("verify --jobs 2 / --jobs 1", one, two, "s", 1.7, rate=False)]


def rows(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    """Every core row, in the table's order."""
    mid = build(tmp, "mid", 2_000 if quick else 100_000)
    return [
        *commits(tmp, quick),
        *bulk(tmp, quick),
        *replay(mid, quick),
        *verify_one(mid, quick),
        *verify_jobs(tmp, quick),
    ]
