"""A refusal's cost against the log's length: the 2,000th within 1.5x of the 10th.

    .venv/bin/python -m bench.refusals [--refusals 2005]

One session appends ten 200-byte turns, then proposes a compaction that drops a
truncated constraint (refused under C5, the whole transcript spilled, as in
``bench/spill_storage.py``), over and over. Each refusal (the ``compact`` call alone)
is timed; the cost at the n-th is the median of the ten around it, and the median of
that over three runs (one run on a noisy host read 1.6x with its series flat: the ten
around the 10th had fallen in a quiet second). The row compares the 2,000th with the
10th (issue 26: within 1.5x); the series is ms per refusal against the log's length
in events.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import eventstore

CONFIG = eventstore.SessionConfig(
    window_tokens=200_000,
    trigger_tokens=160_000,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="spill",
)
TURNS, SIZE = 10, 200  # turns appended between refusals, bytes of content each
FIRST, LAST, QUICK_LAST = 10, 2_000, 60
RATIO = 1.5
WINDOW = 5  # refusals each side of the n-th
RUNS = 3  # independent runs, each in a journal of its own


def _refuse(s: eventstore.Session) -> float:
    """One refused compaction of the whole transcript; its wall time in milliseconds."""
    end = s.state.end
    start = time.perf_counter()
    try:
        s.compact(tier=1, input=(0, end), covers=(0, end), tail_start=end, summary="x", tokens=1)
    except eventstore.UnrecoverableCompactionError:
        return (time.perf_counter() - start) * 1000
    raise AssertionError("the compaction was not refused")


def run(db: Path, refusals: int) -> tuple[list[float], list[int]]:
    """Each refusal's milliseconds, and the log's length (events) before each."""
    times: list[float] = []
    lengths: list[int] = []
    with eventstore.open(db, synchronous="normal") as journal:
        s = journal.start_session("bench", CONFIG)
        s.append_turn("user", "never modify files under /etc", 10)
        s.state_constraint("no-etc", "never modify files under /etc")
        s.truncate(0, 1, "budget")
        for _ in range(refusals):
            turns = s.state.turns
            s.extend(
                eventstore.TurnAppended(index=turns + i, role="tool", content="x" * SIZE, tokens=50)
                for i in range(TURNS)
            )
            lengths.append(s.version)
            times.append(_refuse(s))
    return times, lengths


def at(times: list[float], n: int) -> float:
    """The cost of the ``n``-th refusal (1-based): the median of the ten around it."""
    lo = max(0, n - WINDOW)
    return statistics.median(times[lo : lo + 2 * WINDOW])


def rows(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    """The refusal row in ``bench/run.py``'s shape (quick: the 60th against the 10th)."""
    last = QUICK_LAST if quick else LAST
    level = logging.getLogger("tierlog").level
    logging.getLogger("tierlog").setLevel(logging.ERROR)  # a warning per refusal, by design
    try:
        runs = [run(tmp / f"refusals-{k}.db", last + WINDOW) for k in range(1 if quick else RUNS)]
    finally:
        logging.getLogger("tierlog").setLevel(level)
    lengths = runs[0][1]  # the same in every run

    def cost(n: int) -> float:
        return statistics.median(at(times, n) for times, _ in runs)

    first, nth = cost(FIRST), cost(last)
    step = max(1, last // 20)
    points = [[lengths[n - 1], round(cost(n), 3)] for n in range(FIRST, last + 1, step)]
    return [
        {
            "row": f"refusal: the {last:,}th against the {FIRST}th",
            "floor": round(first, 3),
            "tierlog": round(nth, 3),
            "unit": "ms",
            "ratio": first / nth,
            "target": f"<= {RATIO}x the {FIRST}th",
            "met": nth <= RATIO * first,
            "series": {"label": "refusal (ms)", "x": "log length", "points": points},
        }
    ]


def main() -> None:
    """Print the row and the series."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 60th against the 10th")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        (row,) = rows(Path(tmp), args.quick)
    print(
        f"{row['row']}: {row['floor']:.2f} ms then {row['tierlog']:.2f} ms"
        f" (ratio {row['ratio']:.2f}, target {row['target']}: {'met' if row['met'] else 'MISSED'})"
    )
    for length, ms in row["series"]["points"]:
        print(f"{length:>8} events {ms:>8.2f} ms")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
