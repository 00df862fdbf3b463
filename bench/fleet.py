"""The fleet run: many hosts' SQLite journals shipped at once to one PostgreSQL journal.

``make fleet`` (``python -m bench.fleet``) generates N local journals (one per
"host", each with its own sessions of plain turns and tool calls), starts a
throwaway cluster with the server's durable defaults (``tests/pgcluster.py``), and
for 1, 2, 4 and 8 concurrent shippers ships every journal into a fresh database:
each shipper is an OS process running ``tierlog ship``'s code (``ship``) on its
share of the journals, round robin. It prints the events/s of each count, the
scaling against one shipper, and then runs a cross-session audit query on the
shipped fleet. ``tests/postgres/test_fleet.py`` runs a small slice of it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import eventstore  # noqa: E402
from bench.common import CONFIG, plain_events  # noqa: E402
from eventstore._ops import ship  # noqa: E402
from tests.pgcluster import Cluster, missing  # noqa: E402

SHIPPERS = (1, 2, 4, 8)
AUDIT_SQL = """
SELECT e.session_id, e.events, coalesce(c.calls, 0) AS calls,
       coalesce(r.refusals, 0) AS refusals
FROM (SELECT session_id, count(*) AS events FROM events GROUP BY session_id) e
LEFT JOIN (SELECT session_id, count(*) AS calls FROM obligations
           WHERE kind = 'open_call' GROUP BY session_id) c USING (session_id)
LEFT JOIN (SELECT session_id, count(*) AS refusals FROM compaction_refusals
           GROUP BY session_id) r USING (session_id)
ORDER BY e.session_id
"""


@attrs.frozen(kw_only=True)
class Shape:
    """How big a fleet is: journals (hosts), sessions in each, events in each session."""

    journals: int
    sessions: int
    events: int

    @property
    def total(self) -> int:
        """Events in the whole fleet."""
        return self.journals * self.sessions * self.events


@attrs.frozen(kw_only=True)
class FleetRun:
    """What one fleet run measured."""

    shape: Shape
    rates: dict[int, float]  # shippers: median events/s
    cpu_us: dict[int, tuple[float, float]]  # shippers: CPU µs an event, shippers', server's
    audit_rows: int  # sessions the cross-session audit query listed
    audit_ms: float

    def vs_one(self, shippers: int) -> float:
        """Throughput of ``shippers`` against one shipper."""
        return self.rates[shippers] / self.rates[1]


def make_journals(folder: Path, shape: Shape) -> list[Path]:
    """``shape.journals`` SQLite journals, host ``i``'s sessions named ``host-i:sj``."""
    events = plain_events(shape.events)
    paths = []
    for i in range(shape.journals):
        path = folder / f"host-{i}.db"
        with eventstore.open(str(path), synchronous="normal") as journal:
            for j in range(shape.sessions):
                journal.start_session(f"host-{i}:s{j}", CONFIG).extend(events)
        paths.append(path)
    return paths


@attrs.frozen(kw_only=True)
class Shipping:
    """One concurrent ship of a fleet: its wall-clock seconds and its shippers' CPU seconds."""

    seconds: float
    cpu: float


def ship_fleet(url: str, journals: list[Path], shippers: int) -> Shipping:
    """Seconds for ``shippers`` processes to ship ``journals`` (round robin) to ``url``,
    from the moment all of them are connected to the last one done."""
    with tempfile.TemporaryDirectory() as gate:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "bench.fleet", "ship", url, gate,
                 *map(str, journals[k::shippers])],
                cwd=ROOT, stdout=subprocess.PIPE, text=True,
            )
            for k in range(shippers)
        ]  # fmt: skip
        while len(list(Path(gate).glob("*.ready"))) < shippers:
            if any(p.poll() is not None for p in procs):
                raise RuntimeError("a fleet shipper died before starting")
            time.sleep(0.005)
        start = time.time()
        Path(gate, "go").touch()
        ends = [p.communicate()[0].split() for p in procs]
        if any(p.returncode for p in procs):
            raise RuntimeError("a fleet shipper failed")
    return Shipping(
        seconds=max(float(end) for end, _ in ends) - start,
        cpu=sum(float(cpu) for _, cpu in ends),
    )


def shipper(url: str, gate: str, paths: list[str]) -> None:
    """One shipper process: open its journals and the destination, say so, wait for
    the gate, ship each journal; print the wall-clock time it finished."""
    sources = [eventstore.open(path, readonly=True) for path in paths]
    with eventstore.open(url) as dest:
        Path(gate, f"{time.monotonic_ns()}.ready").touch()
        while not Path(gate, "go").exists():
            time.sleep(0.001)
        cpu = time.process_time()
        for source in sources:
            problems = [str(r) for r in ship(source, dest) if r.problem is not None]
            if problems:
                raise SystemExit(f"not shipped: {problems[0]}")
            source.close()
    print(time.time(), time.process_time() - cpu, flush=True)


def audit(url: str) -> tuple[int, float]:
    """Rows of the cross-session audit query on a shipped fleet, and its milliseconds."""
    with eventstore.open(url, readonly=True) as journal:
        start = time.perf_counter()
        with journal.recorder.query(AUDIT_SQL, timeout=120) as result:
            rows = sum(1 for _ in result.rows)
        return rows, (time.perf_counter() - start) * 1000


def run(
    cluster: Cluster, folder: Path, shape: Shape, shippers: tuple[int, ...], reps: int
) -> FleetRun:
    """Generate the fleet, ship it with each count of shippers ``reps`` times
    (interleaved, each into a fresh database), audit the last one."""
    journals = make_journals(folder, shape)
    runs: dict[int, list[tuple[float, float, float]]] = {n: [] for n in shippers}
    url = ""
    for _ in range(reps):
        for n in shippers:
            url = cluster.create_database("fleet")
            server = cluster.server_cpu()
            shipped = ship_fleet(url, journals, n)
            server = cluster.server_cpu() - server
            runs[n].append((shape.total / shipped.seconds, shipped.cpu, server))
    rows, ms = audit(url)
    return FleetRun(
        shape=shape,
        rates={n: statistics.median(r[0] for r in rs) for n, rs in runs.items()},
        cpu_us={n: _cpu_per_event(rs, shape.total) for n, rs in runs.items()},
        audit_rows=rows,
        audit_ms=ms,
    )


def _cpu_per_event(runs: list[tuple[float, float, float]], events: int) -> tuple[float, float]:
    """Median CPU µs an event took in the shippers and in the server."""
    return (
        statistics.median(r[1] for r in runs) * 1e6 / events,
        statistics.median(r[2] for r in runs) * 1e6 / events,
    )


def report(result: FleetRun) -> list[str]:
    """The run as lines of text: the curve, then the audit."""
    shape = result.shape
    lines = [
        f"fleet: {shape.journals} journals x {shape.sessions} session(s) x"
        f" {shape.events:,} events = {shape.total:,} events",
        "shippers   events/s   vs 1   CPU us/event: shippers  server",
    ]
    lines += [
        f"{n:>8}  {rate:>9,.0f}  {result.vs_one(n):>5.2f}x"
        f"  {result.cpu_us[n][0]:>21.1f}  {result.cpu_us[n][1]:>6.1f}"
        for n, rate in result.rates.items()
    ]
    lines.append(f"cross-session audit: {result.audit_rows} sessions in {result.audit_ms:,.0f} ms")
    return lines


def scaling_row(cluster: Cluster, tmp: Path, quick: bool) -> dict[str, Any]:
    """The bench row of 1 -> 4 concurrent shippers, the curve as its series."""
    shape = Shape(journals=4 if quick else 8, sessions=1, events=300 if quick else 5_000)
    counts = (1, 4) if quick else SHIPPERS
    result = run(cluster, tmp, shape, counts, 1 if quick else 3)
    ratio = result.vs_one(4)
    return {
        "row": "PostgreSQL: 1 -> 4 concurrent shippers (fleet)",
        "floor": round(result.rates[1]),
        "tierlog": round(result.rates[4]),
        "unit": "events/s",
        "ratio": round(ratio, 3),
        "target": ">= 1.5x",
        "met": ratio >= 1.5,
        "series": {
            "label": "fleet ship, events/s",
            "x": "shippers",
            "points": [[n, round(rate)] for n, rate in result.rates.items()],
        },
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.fleet [--journals N --sessions N --events N --reps N]``."""
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__)
    parser.add_argument("--journals", type=int, default=16)
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    reason = missing()
    if reason is not None:
        print(f"fleet run skipped: {reason}")
        return 0
    shape = Shape(journals=args.journals, sessions=args.sessions, events=args.events)
    cluster = Cluster.start(settings=())
    try:
        with tempfile.TemporaryDirectory() as folder:
            result = run(cluster, Path(folder), shape, SHIPPERS, args.reps)
    finally:
        cluster.stop()
    print("\n".join(report(result)))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["ship"]:
        shipper(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        raise SystemExit(main())
