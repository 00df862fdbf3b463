"""The PostgreSQL rows of ``make bench``: tierlog on a server against raw psycopg.

It starts its own throwaway cluster (``tests/pgcluster.py``, as the tests do) with
the server's durable defaults (``fsync``, ``synchronous_commit = on``), on a Unix
socket. Floors are raw psycopg on the same server and row shape: per commit, one
transaction per row (``BEGIN; INSERT; COMMIT``, as the SQLite floor), and for bulk
one ``COPY``, into a plain table ("floor") and into tierlog's own ``events`` table
("schema floor"), binary as tierlog's own. Shipping a SQLite session
(``tierlog ship``, which first checks what ``verify`` checks of it) is measured
against the raw way to carry the same rows: read them with ``sqlite3``, ``COPY``
them in. Per commit also reports one autocommitted ``INSERT`` per row (one round
trip: ``floor_autocommit``). Scaling runs 1, 2, 4 and 8 writer processes, each
appending turns to a session of its own, and reports the aggregate commits per
second; ``bench/fleet.py`` does the same for shippers.

``rows(tmp, quick)`` gives the rows of ``make bench``'s table (issue 26's shape).
"""

from __future__ import annotations

import itertools
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import eventstore  # noqa: E402
from bench.common import CONFIG, content, median_rates, plain_events, result, rows_for  # noqa: E402
from eventstore._ops import session_findings, ship  # noqa: E402
from tests.pgcluster import Cluster, missing  # noqa: E402

COLUMNS = "session_id, version, type, schema_version, payload, recorded_at, prev_hash, hash"
COPY = f"COPY events ({COLUMNS}) FROM STDIN (FORMAT BINARY)"
TYPES = ["text", "int8", "text", "int4", "text", "text", "text", "text"]
INSERT = f"INSERT INTO events ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
PLAIN_DDL = (
    "CREATE TABLE events (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " session_id text, version bigint, type text, schema_version integer, payload text,"
    " recorded_at text, prev_hash text, hash text)"
)
WRITERS = (1, 2, 4, 8)


def run_pg(quick: bool, reps: int) -> dict[str, Any] | str:
    """Every PostgreSQL row, or why there are none."""
    reason = missing()
    if reason is not None:
        return f"PostgreSQL rows skipped: {reason}"
    cluster = Cluster.start(settings=())
    try:
        n, bulk_n, seconds = (200, 20_000, 2.0) if quick else (500, 100_000, 4.0)
        return {
            "pg_commit_full": per_commit(cluster, "full", n, reps),
            "pg_commit_normal": per_commit(cluster, "normal", n, reps),
            "pg_bulk": bulk(cluster, bulk_n, reps),
            "pg_ship": shipping(cluster, Path(cluster.root), bulk_n, reps),
            "pg_scaling": scaling(cluster, seconds, max(2, reps // 2)),
        }
    finally:
        cluster.stop()


def rows(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    """The PostgreSQL rows of ``make bench``'s table (none without a cluster)."""
    if missing() is not None:
        return []
    from bench.fleet import scaling_row

    n, big, reps = (100, 3_000, 1) if quick else (500, 100_000, 5)
    cluster = Cluster.start(settings=())
    try:
        found = [
            _row("PostgreSQL bulk: extend vs raw COPY", bulk(cluster, big, reps)),
            _row("PostgreSQL ship (with its verify check) vs read + raw COPY",
                 shipping(cluster, tmp, big, reps)),
            _row("PostgreSQL NORMAL commits vs raw floor", per_commit(cluster, "normal", n, reps)),
        ]  # fmt: skip
        return [*found, scaling_row(cluster, tmp, quick)]
    finally:
        cluster.stop()


def _row(name: str, measured: dict[str, Any], least: float = 0.5) -> dict[str, Any]:
    """A measured ratio as a row of the bench table (higher is better)."""
    return {
        "row": name,
        "floor": measured["floor"],
        "tierlog": measured["tierlog"],
        "unit": measured["unit"],
        "ratio": measured["ratio"],
        "target": f">= {least}x",
        "met": measured["ratio"] >= least,
    }


def _conn(url: str, sync: str) -> Any:
    import psycopg

    conn = psycopg.connect(url, autocommit=True)
    if sync == "normal":
        conn.execute("SET synchronous_commit = off")
    return conn


def _tierlog_schema(cluster: Cluster) -> str:
    """A fresh schema holding tierlog's DDL (and nothing in it)."""
    url = cluster.create_schema("floor")
    eventstore.open(url).close()
    return url


def per_commit(cluster: Cluster, sync: str, n: int, reps: int) -> dict[str, Any]:
    """One turn per commit with every check, vs one transaction per row (and one
    autocommitted INSERT per row)."""
    journal = eventstore.open(cluster.create_schema("commit"), synchronous=sync)
    s = journal.start_session("s", CONFIG)
    rows = rows_for(plain_events(n * reps * 2))
    plain = _conn(cluster.create_schema("plain"), sync)
    plain.execute(PLAIN_DDL)
    schema = _conn(_tierlog_schema(cluster), sync)
    turns = itertools.count()

    def ours() -> int:
        for _ in range(n):
            s.append_turn("tool", content(next(turns)), 60)
        return n

    def raw(conn: Any, autocommit: bool = False) -> Callable[[], int]:
        it = iter(rows[: len(rows) // 2] if autocommit else rows[len(rows) // 2 :])

        def go() -> int:
            for _ in range(n):
                if autocommit:
                    conn.execute(INSERT, next(it))
                    continue
                with conn.transaction():
                    conn.execute(INSERT, next(it))
            return n

        return go

    *rates, auto = median_rates(ours, raw(plain), raw(schema), raw(plain, True), reps=reps)
    journal.close()
    return {**result(*rates, unit="commits/s"), "floor_autocommit": round(auto)}


def bulk(cluster: Cluster, n: int, reps: int) -> dict[str, Any]:
    """Session.extend of n plain events (validated, hashed, COPY) vs one raw COPY."""
    events = plain_events(n)
    rows = rows_for(events)
    plain = _conn(cluster.create_schema("bulkplain"), "full")
    plain.execute(PLAIN_DDL)
    schema = _conn(_tierlog_schema(cluster), "full")
    count = itertools.count()
    journal = eventstore.open(cluster.create_schema("bulk"))

    def ours() -> int:
        journal.start_session(f"s{next(count)}", CONFIG).extend(events)
        return n

    def raw(conn: Any) -> Callable[[], int]:
        def go() -> int:
            sid = f"s{next(count)}"
            return copy_rows(conn, ((sid, *row[1:]) for row in rows))

        return go

    rates = median_rates(ours, raw(plain), raw(schema), reps=reps)
    journal.close()
    return result(*rates, unit="events/s")


def copy_rows(conn: Any, rows: Iterable[Sequence[object]]) -> int:
    """One transaction, one binary COPY of ``rows``; how many."""
    count = 0
    with conn.transaction(), conn.cursor() as cur, cur.copy(COPY) as copy:
        copy.set_types(TYPES)
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


def shipping(cluster: Cluster, tmp: Path, n: int, reps: int) -> dict[str, Any]:
    """``ship`` of one SQLite session of n events (verify's check first) vs reading
    its rows with sqlite3 and COPYing them; and what the check alone costs."""
    source = tmp / "ship-source.db"
    with eventstore.open(str(source), synchronous="normal") as journal:
        journal.start_session("s", CONFIG).extend(plain_events(n))
    src = eventstore.open(str(source), readonly=True)
    plain = _conn(cluster.create_schema("shipplain"), "full")
    plain.execute(PLAIN_DDL)
    dests = iter([eventstore.open(cluster.create_schema("ship")) for _ in range(reps)])

    def ours() -> int:
        with next(dests) as dest:  # a journal of its own each time, opened beforehand
            return sum(r.events for r in ship(src, dest))

    def raw() -> int:
        lite = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        try:
            return copy_rows(plain, lite.execute(f"SELECT {COLUMNS} FROM events ORDER BY seq"))
        finally:
            lite.close()

    def check() -> int:
        session_findings(src, "s")
        return n

    ship_rate, floor, check_rate = median_rates(ours, raw, check, reps=reps)
    src.close()
    return {**result(ship_rate, floor, unit="events/s"), "check_share": ship_rate / check_rate}


def scaling(cluster: Cluster, seconds: float, reps: int) -> dict[str, Any]:
    """Aggregate commits/s of 1, 2, 4, 8 writer processes, each on its own session."""
    url = cluster.create_database("scaling")
    rates: dict[int, list[float]] = {w: [] for w in WRITERS}
    for _ in range(reps):
        for writers in WRITERS:
            rates[writers].append(_writers(url, writers, seconds))
    medians = {w: statistics.median(r) for w, r in rates.items()}
    return {
        "seconds": seconds,
        "commits_per_s": {str(w): round(r) for w, r in medians.items()},
        "vs_one": {str(w): round(r / medians[1], 2) for w, r in medians.items()},
        "target": ">= 1.5 from 1 to 4 writers",
        "met": medians[4] / medians[1] >= 1.5,
    }


def _writers(url: str, writers: int, seconds: float) -> float:
    """Run ``writers`` processes for ``seconds`` once they are all connected."""
    with tempfile.TemporaryDirectory() as gate:
        command = [sys.executable, "-m", "bench.pg", "write", url, gate, str(seconds)]
        procs = [
            subprocess.Popen([*command, f"w{writers}-{i}-{time.monotonic_ns()}"],
                             cwd=ROOT, stdout=subprocess.PIPE, text=True)
            for i in range(writers)
        ]  # fmt: skip
        while len(list(Path(gate).glob("*.ready"))) < writers:
            if any(p.poll() is not None for p in procs):
                raise RuntimeError("a bench writer died before starting")
            time.sleep(0.01)
        Path(gate, "go").touch()
        commits = sum(int(p.communicate()[0]) for p in procs)
    return commits / seconds


def write(url: str, gate: str, seconds: float, session_id: str) -> None:
    """One bench writer: connect, say so, wait for the gate, append turns for ``seconds``."""
    with eventstore.open(url) as journal:
        s = journal.start_session(session_id, CONFIG)
        Path(gate, f"{session_id}.ready").touch()
        while not Path(gate, "go").exists():
            time.sleep(0.001)
        deadline, commits = time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            s.append_turn("tool", content(commits), 60)
            commits += 1
    print(commits, flush=True)


def render(rows: dict[str, Any] | str) -> list[str]:
    """The PostgreSQL lines of the report."""
    if isinstance(rows, str):
        return ["", rows]
    scale = rows["pg_scaling"]
    per = "  ".join(
        f"{w}: {c:,} ({scale['vs_one'][w]}x)" for w, c in scale["commits_per_s"].items()
    )
    auto = [
        f"{name:<16} vs one autocommitted INSERT a commit (one round trip):"
        f" {row['floor_autocommit']:,} commits/s, tierlog at"
        f" {row['tierlog'] / row['floor_autocommit']:.3f}x"
        for name, row in rows.items()
        if "floor_autocommit" in row
    ]
    check = [
        f"{name:<16} of which the check of what verify checks: {row['check_share']:.0%} of the time"
        for name, row in rows.items()
        if "check_share" in row
    ]
    return [
        *auto,
        *check,
        "",
        f"writers on PostgreSQL (commits/s, {scale['seconds']:g} s each, one session each)",
        f"  {per}   1 -> 4: {scale['vs_one']['4']}x (target {scale['target'][3:]})"
        f"{'' if scale['met'] else ' MISS'}",
    ]


def main() -> None:
    """``python -m bench.pg [--quick]``: the PostgreSQL rows alone."""
    quick = "--quick" in sys.argv
    rows = run_pg(quick=quick, reps=3 if quick else 5)
    if isinstance(rows, dict):
        for name, row in rows.items():
            if "ratio" in row:
                schema = row.get("schema_floor")
                schema = f"  schema floor {schema:>8,}" if schema else ""
                print(
                    f"{name:<16} tierlog {row['tierlog']:>8,}  floor {row['floor']:>8,}"
                    f"{schema}  ratio {row['ratio']:.3f}  {row['unit']}"
                )
    print("\n".join(render(rows)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["write"]:
        write(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5])
    else:
        main()
