"""tierlog benchmarks: ONE table, every row against its floor measured in the same run.

Usage: python bench/run.py [--quick] [--out bench/results.json] [--reference]

Each module of ``MODULES`` gives ``rows(tmp, quick)``: dicts with ``row``, ``floor``,
``tierlog``, ``unit``, ``ratio`` (higher is better: tierlog/floor for a rate,
floor/tierlog for a time), ``target`` (text), ``met`` and, optionally, ``series``
(cost against log length, for the chart). The table prints every row with its
target and "ok" or "MISSED"; ``--reference`` also writes the table into
``bench/README.md`` (between its ``bench:table`` markers) and the chart to
``bench/cost.svg``. Timings are noisy on a shared machine: read the ratios (each
from runs alternating round by round), and the load average printed with them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.chart import svg  # noqa: E402

# the modules whose rows make the table, in its order (each: rows(tmp, quick))
MODULES = [
    "bench.core",
    "bench.startup",
    "bench.ingest_rows",
    "bench.refusals",
    "bench.pg",
    "bench.steady",
]
README = ROOT / "bench" / "README.md"
CHART = ROOT / "bench" / "cost.svg"
MARKERS = ("<!-- bench:table -->", "<!-- /bench:table -->")
KEYS = {"row", "floor", "tierlog", "unit", "ratio", "target", "met"}


def say(what: str) -> None:
    print(f"... {what}", file=sys.stderr, flush=True)


def collect(tmp: Path, quick: bool, modules: Sequence[str] = MODULES) -> list[dict[str, Any]]:
    """Every module's rows, in order; a row without the table's keys is an error."""
    rows: list[dict[str, Any]] = []
    for name in modules:
        say(name)
        folder = tmp / name.rsplit(".", 1)[-1]
        folder.mkdir()
        for found in importlib.import_module(name).rows(folder, quick):
            if not set(found) >= KEYS:
                raise ValueError(f"{name}: a row lacks {sorted(KEYS - set(found))}: {found}")
            rows.append(found)
    return rows


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


def render(rows: Sequence[dict[str, Any]]) -> str:
    """The one table: row, floor, tierlog, unit, ratio, target, ok or MISSED."""
    width = max([len(r["row"]) for r in rows] + [4])
    aim = max([len(r["target"]) for r in rows] + [6])
    lines = [
        f"{'row':<{width}} {'floor':>11} {'tierlog':>11} {'unit':<10} {'ratio':>7}"
        f"  {'target':<{aim}} met"
    ]
    for r in rows:
        lines.append(
            f"{r['row']:<{width}} {_number(r['floor']):>11} {_number(r['tierlog']):>11}"
            f" {r['unit']:<10} {r['ratio']:>7.3f}  {r['target']:<{aim}}"
            f" {'ok' if r['met'] else 'MISSED'}"
        )
    missed = sum(not r["met"] for r in rows)
    lines.append(f"{len(rows) - missed} of {len(rows)} targets met")
    return "\n".join(lines)


def meta(quick: bool) -> dict[str, Any]:
    """Where and how the run was made (the load average says how quiet it was)."""
    try:
        import orjson

        orjson_version: str | None = str(orjson.__version__)
    except ImportError:
        orjson_version = None
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "orjson": orjson_version,
        "quick": quick,
    }


def reference(table: str, info: dict[str, Any], rows: Sequence[dict[str, Any]]) -> None:
    """Write the table into bench/README.md between its markers, and the chart."""
    text = README.read_text()
    start, end = (text.index(m) for m in MARKERS)
    load = ", ".join(map(str, info["load_average"]))
    block = (
        f"{MARKERS[0]}\nRun on {info['date']} with `make bench`: {info['machine']}, Python"
        f" {info['python']}, SQLite {info['sqlite']}, orjson {info['orjson']};"
        f" load average {load} when it ended.\n\n```\n{table}\n```\n"
    )
    README.write_text(text[:start] + block + text[end:])
    CHART.write_text(svg(rows))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    parser.add_argument(
        "--reference", action="store_true", help="write the table and chart into bench/"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=os.environ.get("TIERLOG_BENCH_DIR")) as folder:
        rows = collect(Path(folder), args.quick)
    info, table = meta(args.quick), render(rows)
    Path(args.out).write_text(json.dumps({"meta": info, "rows": rows}, indent=2) + "\n")
    print(table)
    print(f"\nload average {info['load_average']}; written to {args.out}")
    if args.reference:
        reference(table, info, rows)


if __name__ == "__main__":
    main()
