"""How long a live agent's append waits while ``tierlog import`` runs in another process.

Usage: python bench/import_wait.py [--events N] [--pause MS]

Builds a session of about N events (turns, calls, constraints, checkpoints, a
compaction with a marker and a resume every 2,000 events, two refused
compactions with their spills), exports it, then imports it into a journal
while a separate agent process appends one turn every ``--pause`` ms to its own
session of that journal. Prints how long the import took and the agent's
append latencies: every append must succeed, and the longest wait is the
number to read.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import eventstore  # noqa: E402
import reducers as r  # noqa: E402
from eventstore._ops._import import Import, Imported  # noqa: E402
from eventstore._ops._transfer import export_lines  # noqa: E402
from eventstore.cli import main as tierlog  # noqa: E402

CONFIG = eventstore.SessionConfig(
    window_tokens=200_000,
    trigger_tokens=160_000,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="spill",
)
BLOCK = 2_000


def _plain(turn: int, n: int, tag: int) -> list[r.Event]:
    """``n`` plain events from turn ``turn``: turns, a call opened and resolved, a constraint
    stated and lifted (so no obligation outlives its block)."""
    out: list[r.Event] = [
        r.TurnAppended(index=turn, role="user", content="go on", tokens=5),
        r.CallOpened(call_id=f"c{tag}", kind="tool_call", name="grep"),
        r.ConstraintStated(key=f"k{tag}", text="never modify files under /etc"),
    ]
    turn += 1
    while len(out) < n - 2:
        text = f"tool output {turn}: " + "lorem ipsum dolor sit amet " * 7
        out.append(r.TurnAppended(index=turn, role="tool", content=text, tokens=60))
        turn += 1
    out.append(r.CallResolved(call_id=f"c{tag}", outcome="ok"))
    out.append(r.ConstraintLifted(key=f"k{tag}"))
    return out


def build(db: Path, events: int) -> Path:
    """A journal with one session ``big`` of about ``events`` events; returns its export."""
    with eventstore.open(db, synchronous="normal") as journal:
        s = journal.start_session("big", CONFIG)
        refusals = {events // 3 // BLOCK, 2 * events // 3 // BLOCK}
        block = 0
        while s.state.version < events - BLOCK:
            lo = s.state.end
            s.extend(_plain(s.state.turns, BLOCK - 6, block))
            s.checkpoint()
            end = s.state.end
            if block in refusals:  # a seam hole (C4): refused, and the transcript spilled
                with contextlib.suppress(eventstore.UnrecoverableCompactionError):
                    s.compact(
                        tier=1,
                        input=(lo, end),
                        covers=(lo, end - 1),
                        tail_start=end,
                        summary="a hole",
                        tokens=40,
                    )
            node = s.compact(
                tier=1,
                input=(lo, end),
                covers=(lo, end),
                tail_start=end,
                summary=f"block {block}",
                tokens=40,
            )
            s.resume(s.emit_marker(node.node_id).marker_id)
            block += 1
        dump = db.with_suffix(".jsonl")
        with open(dump, "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in export_lines(journal, "big"))
    return dump


def agent(db: str, stop: str, pause: float) -> None:
    """Append a turn every ``pause`` seconds until ``stop`` exists; print latencies as JSON."""
    waits: list[float] = []
    failures: list[str] = []
    with eventstore.open(db) as journal:
        s = journal.session("live")
        Path(f"{stop}.ready").touch()
        while not os.path.exists(stop):
            t = time.perf_counter()
            try:
                s.append_turn("assistant", "still working", 5)
            except eventstore.JournalError as exc:
                failures.append(f"{type(exc).__name__}: {exc}")
            waits.append(time.perf_counter() - t)
            time.sleep(pause)
    print(json.dumps({"waits": waits, "failures": failures}))


def measure(dump: Path, target: Path, pause: float) -> dict[str, object]:
    """Import ``dump`` into ``target`` while an agent process appends to it."""
    with eventstore.open(target) as journal:
        journal.start_session("live", CONFIG)
    stop = target.with_suffix(".stop")
    child = subprocess.Popen(
        [sys.executable, __file__, "agent", str(target), str(stop), str(pause)],
        stdout=subprocess.PIPE,
        text=True,
    )
    while not Path(f"{stop}.ready").exists():
        time.sleep(0.01)
    time.sleep(0.2)
    held: list[float] = []
    commit = Import.commit

    def timed(job: Import, journal: eventstore.Journal) -> list[Imported]:
        start = time.perf_counter()
        try:
            return commit(job, journal)
        finally:
            held.append(time.perf_counter() - start)

    Import.commit = timed  # type: ignore[method-assign,assignment]
    t = time.perf_counter()
    try:
        code = tierlog(["import", str(target), str(dump)])
    finally:
        Import.commit = commit  # type: ignore[method-assign]
    took = time.perf_counter() - t
    time.sleep(0.2)
    stop.touch()
    out, _ = child.communicate(timeout=120)
    report = json.loads(out)
    waits = sorted(report["waits"])
    return {
        "import_exit": code,
        "verify_exit": tierlog(["verify", str(target)]),
        "import_seconds": round(took, 2),
        "lock_held_seconds": round(sum(held), 2),
        "appends": len(waits),
        "failures": report["failures"],
        "max_wait_ms": round(1000 * waits[-1], 1),
        "p99_wait_ms": round(1000 * waits[int(0.99 * (len(waits) - 1))], 1),
        "median_wait_ms": round(1000 * statistics.median(waits), 2),
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "agent":
        agent(sys.argv[2], sys.argv[3], float(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=250_000)
    parser.add_argument("--pause", type=float, default=10.0, help="ms between agent appends")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TIERLOG_BENCH_DIR")) as d:
        t = time.perf_counter()
        dump = build(Path(d) / "source.db", args.events)
        lines = len(dump.read_bytes().splitlines())
        print(f"built {lines:,} events in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        result = measure(dump, Path(d) / "target.db", args.pause / 1000)
    print(json.dumps({"events": lines, **result}, indent=2))


if __name__ == "__main__":
    main()
