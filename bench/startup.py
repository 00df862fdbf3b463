"""Cold start: ``import eventstore``, a first ``eventstore.open``, ``tierlog --help`` and
a no-op hook, each against bare ``python -c pass`` measured in the same run.

    .venv/bin/python -m bench.startup [--rounds 21]

Every command is a new process, as a user (or Claude Code, once per prompt) starts it.
The rounds are interleaved (bare, import, help, hook, bare, ...) so that load on the
machine falls on all of them alike; each row is the median of its rounds. Targets
(issue 26): ``import eventstore`` <= 80 ms and ``tierlog --help`` <= 150 ms above bare
Python; the hook (``tierlog claude-code hook``, a ``UserPromptSubmit`` with nothing
queued) likewise <= 150 ms. ``import eventstore`` imports a name's module when the name
is first used, so the row after it holds the first-use figure of an open: import and
open a journal (SQLite, existing), against the same 80 ms. An open loads the SQLite
backend and the store modules its recorder is built of; a first session loads the rest
(commands, decide, invariants, the state and its fold, snapshots, spills):
``tests/test_layers.py`` pins the open's modules (``OPEN_PATH``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROUNDS, QUICK_ROUNDS = 21, 1
OPEN = "import sys, eventstore; eventstore.open(sys.argv[1]).close()"
HOOK_INPUT = {"hook_event_name": "UserPromptSubmit", "session_id": "bench-startup", "prompt": "hi"}


def tierlog() -> list[str]:
    """The ``tierlog`` console script beside this interpreter (``-m eventstore`` if none)."""
    script = Path(sys.executable).with_name("tierlog")
    return [str(script)] if script.exists() else [sys.executable, "-m", "eventstore"]


def commands(journal: Path) -> dict[str, tuple[list[str], str]]:
    """What is timed, by row: the command line and its standard input."""
    hook_input = json.dumps({**HOOK_INPUT, "transcript_path": str(journal.with_suffix(".jsonl"))})
    return {
        "bare": ([sys.executable, "-c", "pass"], ""),
        "import": ([sys.executable, "-c", "import eventstore"], ""),
        "open": ([sys.executable, "-c", OPEN, str(journal)], ""),
        "help": ([*tierlog(), "--help"], ""),
        "hook": ([*tierlog(), "claude-code", "hook", "--journal", str(journal)], hook_input),
    }


def once(command: list[str], stdin: str) -> float:
    """One run's wall time in milliseconds (RuntimeError if it fails or says anything on
    standard error: a no-op is quiet)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env)
    took = (time.perf_counter() - start) * 1000
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(f"{command}: exit {done.returncode}: {done.stderr.strip()[:300]}")
    return took


def measure(tmp: Path, rounds: int) -> dict[str, list[float]]:
    """Each command's times over ``rounds`` interleaved rounds (after one warm-up)."""
    todo = commands(tmp / "startup.db")
    times: dict[str, list[float]] = {name: [] for name in todo}
    for n in range(rounds + 1):
        for name, (command, stdin) in todo.items():
            took = once(command, stdin)
            if n:  # the first round warms the page cache and writes the bytecode
                times[name].append(took)
    return times


ROWS = {  # row name, target above bare Python (ms)
    "import": ("cold start: python -c 'import eventstore'", 80.0),
    "open": ("cold start: import eventstore, open a journal", 80.0),
    "help": ("cold start: tierlog --help", 150.0),
    "hook": ("cold start: tierlog claude-code hook (nothing to do)", 150.0),
}


def rows(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    """The four cold-start rows in ``bench/run.py``'s shape: ``floor`` is bare Python,
    ``tierlog`` the command, both median ms; met when the difference is within target."""
    times = measure(tmp, QUICK_ROUNDS if quick else ROUNDS)
    bare = statistics.median(times["bare"])
    out = []
    for key, (name, budget) in ROWS.items():
        took = statistics.median(times[key])
        out.append(
            {
                "row": name,
                "floor": round(bare, 1),
                "tierlog": round(took, 1),
                "unit": "ms",
                "ratio": bare / took,
                "target": f"<= {budget:.0f} ms above bare python",
                "met": took - bare <= budget,
            }
        )
    return out


def main() -> None:
    """Print the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        times = measure(Path(tmp), args.rounds)
    bare = statistics.median(times["bare"])
    print(f"{'bare python -c pass':55} {bare:7.1f} ms")
    for key, (name, budget) in ROWS.items():
        took = statistics.median(times[key])
        verdict = "met" if took - bare <= budget else "MISSED"
        print(f"{name:55} {took:7.1f} ms  +{took - bare:6.1f} (<= {budget:.0f}: {verdict})")


if __name__ == "__main__":
    main()
