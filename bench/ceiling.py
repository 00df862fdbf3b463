"""How close tierlog's own steps can come to issue 15's floors, with nothing around them.

Usage: python -m bench.ceiling [--reps N]

Per commit: the steps a checked turn needs (build the event, validate, fold it,
encode and hash it, ``BEGIN IMMEDIATE``, ``PRAGMA data_version``, ``INSERT``,
``COMMIT``) written as one bare loop on tierlog's connection, with no Session,
Decider, recorder or transaction object: the most any orchestration could reach
with these steps. The same two loops again with SQLite stubbed out (every statement
a no-op, CPU time): what a commit's Python costs, and how much of it is
orchestration. Bulk: each step of ``Session.extend`` timed alone, per event,
against the budget a 0.6x ratio leaves above the schema floor.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import eventstore
import invariants
import reducers as r
from bench.common import (
    CONFIG,
    INSERT,
    PLAIN_DDL,
    content,
    floor_db,
    median_rates,
    new_session,
    plain_events,
    rows_for,
)
from eventstore._sqlite._recorder import SqliteRecorder
from eventstore._sqlite._schema import TABLES
from eventstore._store._chain import link_rows
from eventstore._store._clock import utc_now


def per_commit(tmp: Path, n: int, reps: int, sync: str = "normal") -> list[float]:
    """Commits/s of append_turn, the plain floor and the bare loop of its steps (files
    ``live``, ``bare`` and ``floor``, with ``-full`` under ``synchronous=full``)."""
    tag = "" if sync == "normal" else f"-{sync}"
    live = new_session(tmp, f"live{tag}", sync)
    journal = eventstore.open(tmp / f"bare{tag}.db", synchronous=sync)
    state = journal.start_session("s", CONFIG).state
    recorder = journal.recorder
    assert isinstance(recorder, SqliteRecorder)
    conn, (version, prev) = recorder.conn, recorder.head("s")
    floor = floor_db(tmp / f"floor{tag}.db", sync)
    rows = iter(rows_for(plain_events(n * reps)))
    texts = (content(i) for i in itertools.count())

    def ours() -> int:
        for _ in range(n):
            live.append_turn("tool", next(texts), 60)
        return n

    def raw() -> int:
        for _ in range(n):
            floor.execute("BEGIN IMMEDIATE")
            floor.execute(INSERT, next(rows))
            floor.execute("COMMIT")
        return n

    def steps() -> int:
        nonlocal state, version, prev
        for _ in range(n):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("PRAGMA data_version").fetchone()
            event = r.TurnAppended(index=state.turns, role="tool", content=next(texts), tokens=60)
            invariants.validate(state, event)
            state = r.apply(state, event)
            row = link_rows("s", version, prev, (event,), utc_now())[0]
            conn.execute(INSERT, row)
            conn.execute("COMMIT")
            version, prev = version + 1, row[7]
        return n

    return median_rates(ours, raw, steps, reps=reps)


class _NoCursor:
    """What a stubbed statement returns: ``PRAGMA data_version`` reads 1."""

    def fetchone(self) -> tuple[int]:
        return (1,)


class _NoSqlite:
    """A connection whose statements do nothing, inside a transaction that never ends."""

    in_transaction = True
    _cursor = _NoCursor()

    def execute(self, sql: str, parameters: object = ()) -> _NoCursor:
        return self._cursor


def python_only(tmp: Path, n: int, reps: int) -> dict[str, float]:
    """CPU µs a commit of append_turn and of the bare loop of its steps, with every SQL
    statement a no-op (the least of ``reps`` rounds of ``n``, alternating): the Python
    a commit runs, and the part of it that is orchestration (the difference)."""
    journal = eventstore.open(tmp / "stubbed.db", synchronous="normal", snapshot_every=0)
    live = journal.start_session("s", CONFIG)
    recorder = journal.recorder
    assert isinstance(recorder, SqliteRecorder)
    real, fake = recorder.conn, _NoSqlite()
    version, prev = recorder.head("s")
    state = live.state
    texts = [content(i) for i in range(n)]

    def ours() -> None:
        for text in texts:
            live.append_turn("tool", text, 60)

    def steps() -> None:
        nonlocal state, version, prev
        for text in texts:
            fake.execute("BEGIN IMMEDIATE")
            fake.execute("PRAGMA data_version").fetchone()
            event = r.TurnAppended(index=state.turns, role="tool", content=text, tokens=60)
            invariants.validate(state, event)
            state = r.apply(state, event)
            row = link_rows("s", version, prev, (event,), utc_now())[0]
            fake.execute(INSERT, row)
            fake.execute("COMMIT")
            version, prev = version + 1, row[7]

    best = {"append_turn": float("inf"), "its steps": float("inf")}
    recorder.conn = fake  # type: ignore[assignment]  # the stub speaks the part used here
    recorder._data_version = 1  # the head read once stays valid: nobody else commits
    try:
        for _ in range(reps):
            for name, run in (("append_turn", ours), ("its steps", steps)):
                begun = time.process_time()
                run()
                best[name] = min(best[name], (time.process_time() - begun) / n * 1e6)
    finally:
        recorder.conn = real
        journal.close()
    return best


def bulk(tmp: Path, n: int, reps: int) -> dict[str, float]:
    """Microseconds an event for each step of extend, and for extend itself."""
    events = plain_events(n)
    rows = rows_for(events)
    start = new_session(tmp, "start", "normal").state
    made = itertools.count()

    def us(run: Callable[[], object]) -> float:
        times = []
        for _ in range(reps):
            begun = time.perf_counter()
            run()
            times.append(time.perf_counter() - begun)
        return statistics.median(times) / n * 1e6

    def insert(ddl: tuple[str, ...]) -> Callable[[], None]:
        def go() -> None:
            conn = floor_db(tmp / f"bulk-{next(made)}.db", "normal", ddl)
            conn.execute("PRAGMA ignore_check_constraints = ON")  # as tierlog's writer
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(INSERT, rows)
            conn.execute("COMMIT")

        return go

    return {
        "plain floor": us(insert((PLAIN_DDL,))),
        "schema floor": us(insert(TABLES)),
        "validate and fold": us(
            lambda: r.fold(
                events, start, check=invariants.validate, turn_check=invariants.check_turn
            )
        ),
        "encode and hash": us(lambda: link_rows("s", 1, "0" * 64, events, utc_now())),
        "extend": us(lambda: new_session(tmp, f"x{next(made)}", "normal").extend(events)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        ours, floor, steps = per_commit(tmp, 500, args.reps)
        print("one turn a commit, NORMAL (commits/s, ratio to the plain floor)")
        print(f"  plain floor        {floor:>9,.0f}")
        print(f"  append_turn        {ours:>9,.0f}  {ours / floor:.3f}")
        print(f"  its steps, bare    {steps:>9,.0f}  {steps / floor:.3f}")
        stubbed = python_only(tmp, 1000, max(7, args.reps))
        print("the same with SQLite stubbed out (CPU µs a commit, least of the rounds)")
        for name, value in stubbed.items():
            print(f"  {name:<18} {value:>6.2f}")
        orchestration = stubbed["append_turn"] - stubbed["its steps"]
        print(f"  orchestration      {orchestration:>6.2f}")
        parts = bulk(tmp, 100_000, max(3, args.reps // 2))
        budget = parts["plain floor"] / 0.6 - parts["schema floor"]
        print("bulk extend of 100k events (µs an event)")
        for name, value in parts.items():
            print(f"  {name:<18} {value:>6.2f}")
        print(f"  at 0.6x, Python may spend {budget:.2f} µs an event above the schema floor")


if __name__ == "__main__":
    main()
