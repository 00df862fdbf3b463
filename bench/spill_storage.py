"""Spill storage against the log: N refusals, each spilling the whole transcript.

Usage: python bench/spill_storage.py [--refusals 2052] [--turns 10] [--size 200]

One session appends ``--turns`` turns of ``--size`` bytes of content, then proposes
a compaction that drops a truncated constraint (refused, the full transcript spilled),
``--refusals`` times. It prints the bytes stored in the spill root beside the log's
own transcript and beside what tierlog 0.1 stored for the same refusals (a full copy
each: the sum of the recorded spill sizes), at a few points on the way, with the time
per refusal and of one ``verify`` of the whole journal.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import eventstore  # noqa: E402
from eventstore._ops._audit import verify  # noqa: E402

CONFIG = eventstore.SessionConfig(
    window_tokens=200_000,
    trigger_tokens=160_000,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="spill",
)


def _stored(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def _refuse(s: eventstore.Session) -> None:
    end = s.state.end
    try:
        s.compact(tier=1, input=(0, end), covers=(0, end), tail_start=end, summary="x", tokens=1)
    except eventstore.UnrecoverableCompactionError:
        return
    raise AssertionError("not refused")


def run(refusals: int, turns: int, size: int, db: Path) -> None:
    """Run the workload into ``db`` and print a line at each checkpoint."""
    journal = eventstore.open(db, synchronous="normal")
    s = journal.start_session("bench", CONFIG)
    s.append_turn("user", "never modify files under /etc", 10)
    s.state_constraint("no-etc", "never modify files under /etc")
    s.truncate(0, 1, "budget")
    marks = {refusals * k // 8 for k in range(1, 9)} | {1, 10}
    print(
        f"{'refusals':>8} {'events':>7} {'transcript':>11} {'stored':>11} {'files':>6}"
        f" {'0.1 stored':>13} {'stored/transcript':>17} {'ms/refusal':>10}"
    )
    started = last = time.perf_counter()
    last_n = 0
    for n in range(1, refusals + 1):
        s.extend(
            eventstore.TurnAppended(
                index=s.state.turns + i, role="tool", content="x" * size, tokens=50
            )
            for i in range(turns)
        )
        _refuse(s)
        if n in marks:
            now = time.perf_counter()
            stored, files = _stored(Path(journal.spills.location))
            spills = s.state.spills
            transcript, copies = spills[-1].bytes, sum(sp.bytes for sp in spills)
            per = (now - last) / (n - last_n) * 1000
            print(
                f"{n:>8} {s.version:>7} {transcript:>11,} {stored:>11,} {files:>6}"
                f" {copies:>13,} {stored / transcript:>17.3f} {per:>10.2f}"
            )
            last, last_n = now, n
    total = time.perf_counter() - started
    t0 = time.perf_counter()
    findings = verify(journal)
    print(
        f"total {total:.1f} s for {refusals} refusals; verify {time.perf_counter() - t0:.1f} s,"
        f" {len(findings)} finding(s)"
    )
    journal.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refusals", type=int, default=2052)
    parser.add_argument("--turns", type=int, default=10, help="turns appended between refusals")
    parser.add_argument("--size", type=int, default=200, help="bytes of content per turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args.refusals, args.turns, args.size, Path(tmp) / "spills.db")


if __name__ == "__main__":
    main()
