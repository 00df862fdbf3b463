"""``make sql-memory``: a PostgreSQL ``tierlog sql`` of 20,000,000 rows in bounded memory.

Starts a throwaway cluster, runs the real CLI in a child that prints every row of
``generate_series`` to /dev/null, and reports its peak RSS (``VmHWM``) and time; then
a query of 10**15 rows with ``--timeout`` and how long it took to stop. Exits 1 if the peak
RSS passes ``--limit-mb`` (200) or the timed query ran well past its timeout.

    python -m tests.sql_memory --rows 20000000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import eventstore
from tests import pgcluster

QUERY = "SELECT g, md5(g::text) FROM generate_series(1, {rows}) g"


# the CLI, then its own peak RSS (VmHWM: of this process image alone, unlike a child's
# ru_maxrss, which counts the parent's pages it was forked with) on the last line
PEAK = (
    "import sys\n"
    "from eventstore.cli import main\n"
    "try:\n"
    "    code = main(sys.argv[1:])\n"
    "finally:\n"
    "    status = open('/proc/self/status').read()\n"
    "    print(status.split('VmHWM:')[1].split()[0], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def peak_rss(argv: list[str]) -> tuple[int, float, float]:
    """Exit code, seconds and peak RSS (MB) of the CLI run with ``argv``."""
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *argv],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False,
    )  # fmt: skip
    peak_kb = int(done.stderr.strip().splitlines()[-1])
    return done.returncode, time.monotonic() - start, peak_kb / 1024


def run(url: str, rows: int, timeout: float) -> tuple[int, float, float]:
    """Exit code, seconds and peak RSS (MB) of ``tierlog sql`` printing ``rows`` rows."""
    return peak_rss(["sql", url, QUERY.format(rows=rows), "--max-rows", "0",
                     "--max-bytes", "0", "--timeout", str(timeout)])  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--limit-mb", type=float, default=200.0)
    parser.add_argument("--timeout", type=float, default=10.0, help="for the timed query")
    args = parser.parse_args()
    cluster = pgcluster.Cluster.start()
    try:
        url = cluster.create_schema()
        eventstore.open(url).close()
        code, seconds, rss = run(url, args.rows, 24 * 3600)
        print(f"{args.rows:,} rows: exit {code}, {seconds:.1f} s, peak RSS {rss:.1f} MB")
        stopped, after, rss_t = run(url, 10**15, args.timeout)  # runs until stopped
        print(f"--timeout {args.timeout:g}: exit {stopped} after {after:.1f} s,", end=" ")
        print(f"peak RSS {rss_t:.1f} MB")
    finally:
        cluster.stop()
    ok = code == 0 and max(rss, rss_t) <= args.limit_mb and stopped == 2
    ok = ok and after < args.timeout + 15  # the interpreter's start, the cluster's answer
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
