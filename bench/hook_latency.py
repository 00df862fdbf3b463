"""How long Claude Code waits for tierlog's hooks, each event as Claude Code runs it.

    .venv/bin/python -m bench.hook_latency [--mb 10] [--new-mb 1] [--reps 30] [--sessions 40]

Claude Code starts the installed command (``python -I -S .../_hook.py --journal J``) as
a new process per event and waits for it: that wall time is what is measured, p50, p95
and max of ``--reps`` runs, on a transcript of ``--mb`` MB (``bench/transcript.py``) of
which the last ``--new-mb`` MB are not in the journal yet, once against a journal that
holds this session alone and once against one holding ``--sessions`` more. Target
(issue 24): every hook p95 <= 300 ms, and no worse on the bigger journal.

The journal work the hooks start and do not wait for (the worker: ingest, the block
SessionStart gives, the queue) is timed too, with no target of its own: SessionStart
waits for PreCompact's when the summary comes back before it is done.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

import eventstore
from bench.transcript import SESSION, Writer
from eventstore._retell import HEADER
from eventstore.claude_code import _hook
from eventstore.claude_code._hook import Folder, wait_idle

TARGET_MS = 300.0
BLOCK = HEADER + "\n- a line"


@attrs.frozen(kw_only=True)
class Setup:
    """A journal holding the transcript's first part, and the whole transcript."""

    journal: Path
    transcript: Path
    sessions: int  # sessions in the journal
    writer: Writer = attrs.field(eq=False)


def prepare(folder: Path, mb: float, new_mb: float, others: int) -> tuple[Setup, Setup]:
    """The transcript and two journals that hold its first ``mb - new_mb`` MB: one with
    this session alone, one with ``others`` more (1 MB transcripts of their own)."""
    transcript = folder / f"{SESSION}.jsonl"
    writer = Writer(transcript)
    writer.grow(int((mb - new_mb) * 1e6))
    small = folder / "small.db"
    with eventstore.open(small) as journal:
        eventstore.ingest(journal, transcript)
    big = folder / "big.db"
    shutil.copy(small, big)
    with eventstore.open(big) as journal:
        for n in range(others):
            other = folder / f"other-{n}.jsonl"
            Writer(other, seed=n + 2, session=f"other-{n:04d}").grow(1_000_000)
            eventstore.ingest(journal, other)
            other.unlink()
    writer.grow(int(new_mb * 1e6))
    return (
        Setup(journal=small, transcript=transcript, sessions=1, writer=writer),
        Setup(journal=big, transcript=transcript, sessions=1 + others, writer=writer),
    )


def hook(setup: Setup, data: dict[str, Any]) -> float:
    """One hook run as Claude Code starts it; its wall time in milliseconds."""
    command = [sys.executable, "-I", "-S", _hook.__file__, "--journal", str(setup.journal)]
    payload = json.dumps({"session_id": SESSION, "transcript_path": str(setup.transcript), **data})
    start = time.perf_counter()
    done = subprocess.run(command, input=payload, capture_output=True, text=True, check=False)
    took = (time.perf_counter() - start) * 1000
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(f"hook {data}: exit {done.returncode}: {done.stderr.strip()}")
    return took


def events(setup: Setup) -> dict[str, tuple[dict[str, Any], Callable[[Folder], None]]]:
    """Each hook event measured: its input, and what to set up before each run."""
    nothing: Callable[[Folder], None] = lambda _: None  # noqa: E731
    return {
        "UserPromptSubmit (nothing queued)": ({"hook_event_name": "UserPromptSubmit"}, nothing),
        "UserPromptSubmit (a block queued)": (
            {"hook_event_name": "UserPromptSubmit"},
            lambda f: f.write("queue", BLOCK),
        ),
        "SessionStart (compact, block ready)": (
            {"hook_event_name": "SessionStart", "source": "compact"},
            lambda f: f.write("compact", BLOCK),
        ),
        "PreCompact (starts the worker)": (
            {"hook_event_name": "PreCompact", "trigger": "auto"},
            nothing,
        ),
        "PostCompact (starts the worker)": (
            {"hook_event_name": "PostCompact", "trigger": "auto"},
            lambda _: setup.writer.compact(),  # Claude Code writes it as the hook runs
        ),
        "Stop (nothing to record)": ({"hook_event_name": "Stop"}, nothing),
    }


def measure(setup: Setup, reps: int) -> dict[str, list[float]]:
    """Each event's wall times; the workers a run starts finish before the next run."""
    folder = Folder(str(setup.journal), SESSION)
    folder.make()
    out: dict[str, list[float]] = {}
    for name, (data, before) in events(setup).items():
        times = []
        for _ in range(reps):
            before(folder)
            times.append(hook(setup, data))
            if not wait_idle(str(setup.journal), 600):
                raise RuntimeError(f"{name}: the worker did not finish")
        out[name] = times
        for what in ("queue", "told", "given", "compact"):
            folder.remove(what)
    return out


def worker(setup: Setup, folder: Path, reps: int) -> tuple[float, float]:
    """The PreCompact worker on a fresh copy of the journal (the new part ingested), then
    again on the same (nothing new): median seconds of each."""
    first: list[float] = []
    again: list[float] = []
    for n in range(reps):
        copy = folder / f"copy-{setup.sessions}-{n}.db"
        shutil.copy(setup.journal, copy)
        command = [sys.executable, "-I", "-m", "eventstore.claude_code._worker", "precompact"]
        command += ["--journal", str(copy), "--session", SESSION]
        command += ["--transcript", str(setup.transcript)]
        for times in (first, again):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            times.append(time.perf_counter() - start)
    return statistics.median(first), statistics.median(again)


def percentile(times: list[float], p: float) -> float:
    """The ``p`` percentile (nearest rank)."""
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def baseline(reps: int) -> float:
    """``python -I -S -c pass``: the floor of any hook, median milliseconds."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def render(rows: dict[int, dict[str, list[float]]], floor: float) -> list[str]:
    """The table: each event's p50/p95/max per journal size, and whether it met 300 ms."""
    sizes = sorted(rows)
    head = f"{'hook (ms)':38}" + "".join(f"{f'{s} session(s) p50/p95/max':>30}" for s in sizes)
    lines = [head + "  target"]
    for name in rows[sizes[0]]:
        cells = [rows[s][name] for s in sizes]
        shown = "".join(
            f"{f'{statistics.median(t):.0f} / {percentile(t, 95):.0f} / {max(t):.0f}':>30}"
            for t in cells
        )
        met = all(percentile(t, 95) <= TARGET_MS for t in cells)
        lines.append(f"{name:38}{shown}  p95 <= {TARGET_MS:.0f} {'ok' if met else 'MISS'}")
    lines.append(f"{'python -I -S -c pass (the floor)':38}{f'{floor:.0f}':>30}")
    return lines


def main() -> None:
    """Print the table and the workers' times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="transcript size (MB)")
    parser.add_argument("--new-mb", type=float, default=1.0, help="its part not ingested yet")
    parser.add_argument("--reps", type=int, default=30, help="runs per hook event")
    parser.add_argument("--sessions", type=int, default=40, help="other sessions, big journal")
    parser.add_argument("--worker-reps", type=int, default=3, help="runs of the worker")
    args = parser.parse_args()
    logging.getLogger("tierlog").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        small, big = prepare(folder, args.mb, args.new_mb, args.sessions)
        size = os.path.getsize(small.transcript) / 1e6
        print(f"transcript {size:.1f} MB, of which {args.new_mb:g} MB not ingested yet;")
        mb = big.journal.stat().st_size / 1e6
        print(f"journals: 1 session, and {big.sessions} sessions ({mb:.0f} MB)")
        workers = {s.sessions: worker(s, folder, args.worker_reps) for s in (small, big)}
        rows = {s.sessions: measure(s, args.reps) for s in (small, big)}
        print("\n".join(render(rows, baseline(args.reps))))
        for sessions, (first, again) in workers.items():
            print(
                f"PreCompact's worker, {sessions} session(s): {first:.2f} s with the new"
                f" {args.new_mb:g} MB, {again:.2f} s with nothing new"
                f" (median of {args.worker_reps})"
            )


if __name__ == "__main__":
    main()
