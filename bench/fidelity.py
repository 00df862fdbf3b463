"""Does the gate pay for itself? A seeded simulator of long agent sessions, four arms.

Usage: python bench/fidelity.py [--quick] [--seed N] [--sessions N] [--jobs N]
                                [--out bench/fidelity.json] [--svg bench/fidelity.svg]

Plays the same seeded session scripts on a runtime over tierlog (the real API,
refusals caught and re-summarized once, or marker refusals lived with as raw
fallbacks), on a baseline that commits every compaction and trusts every marker,
and on that baseline re-telling what its context owes after each truncation and
compaction, at each summarizer drop rate and window/trigger setting. Writes the
rows as JSON (same seed, same bytes) and an SVG chart, and prints a Markdown
table. ``--quick`` is the smoke run the tests use: a few short sessions, files
written only when asked for.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sim import chart, report  # noqa: E402
from bench.sim.sweep import ARMS, Plan, run, to_json  # noqa: E402
from bench.sim.workload import Shape  # noqa: E402

FULL = Shape(tokens=500_000, crashes=6)
QUICK = Shape(tokens=300_000, crashes=4)
QUICK_DROPS = (0.0, 0.4)


def plan_for(args: argparse.Namespace) -> Plan:
    """The plan the arguments ask for."""
    if args.quick:
        return Plan(
            seed=args.seed, sessions=args.sessions or 2, shape=QUICK, drop_rates=QUICK_DROPS
        )
    return Plan(seed=args.seed, sessions=args.sessions or 200, shape=FULL)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence tierlog's refusal warnings (thousands, by design) for the run."""
    logger = logging.getLogger("tierlog")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="example: python bench/fidelity.py --quick",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: few, short sessions")
    parser.add_argument("--seed", type=int, default=13, help="the sweep's seed (default 13)")
    parser.add_argument("--sessions", type=int, default=0, help="sessions per cell (200; quick 2)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes")
    parser.add_argument("--out", type=Path, help="JSON rows (default bench/fidelity.json)")
    parser.add_argument("--svg", type=Path, help="the chart (default bench/fidelity.svg)")
    args = parser.parse_args(argv)
    if not args.quick:
        args.out = args.out or ROOT / "bench" / "fidelity.json"
        args.svg = args.svg or ROOT / "bench" / "fidelity.svg"
    return args


def main(argv: list[str] | None = None) -> str:
    """Run the sweep; returns the JSON text it wrote (or would have written)."""
    args = parse(argv)
    plan = plan_for(args)
    started = time.perf_counter()
    with quiet():
        rows = run(plan, jobs=args.jobs)
    elapsed = time.perf_counter() - started
    text = to_json(plan, rows)
    if args.out:
        args.out.write_text(text)
    if args.svg:
        args.svg.write_text(chart.render(rows))
    print(report.table(rows), end="")
    print("\n".join(report.fallback_cost(rows)))
    cells = len(rows) // len(ARMS)
    print(
        f"{cells} cells x {plan.sessions} sessions x {len(ARMS)} arms in {elapsed:.1f} s"
        f" ({args.jobs} process(es))",
        file=sys.stderr,
    )
    return text


if __name__ == "__main__":
    main()
