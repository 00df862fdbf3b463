"""Incremental ingest (issue 26): what re-ingesting a Claude Code transcript costs.

    .venv/bin/python -m bench.ingest_rows [--quick]

Targets: a transcript that grew by 1% re-ingests in <= 10% of its full ingest time;
an unchanged one in <= 50 ms above cold start. Transcripts are ``bench/transcript.py``'s
(shaped like the pinned CLI's, a compaction every 200 rounds). Everything is ingested
as the hooks' worker does it (``ingest(..., reviews=False)``, ``synchronous="full"``):

- *1% growth*: the file's first 99% ingested, then the whole file, on a fresh copy of
  that journal each round; the floor is a full ingest of the whole file into an empty
  journal, timed in the same rounds (interleaved, medians);
- *unchanged*: a new process (``python -I -c ...``) that imports the ingest, opens the
  journal and ingests the file it already holds, timed by itself from its first line
  to its last; the floor is the same process's import of the ingest: the cold start,
  whose own cost is the cold-start rows' business;
- the series: the 1%-growth re-ingest at several transcript lengths (x: the events
  the session holds), which should stay flat.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import eventstore
from bench.transcript import Writer
from eventstore.claude_code import ingest

GROWTH = 0.01
TARGET_SHARE = 0.10  # of the full ingest
TARGET_ABOVE_MS = 50.0  # above cold start
UNCHANGED = """
import sys, time
start = time.perf_counter()
import eventstore
from eventstore.claude_code import ingest
imported = time.perf_counter()
with eventstore.open(sys.argv[1]) as journal:
    assert ingest(journal, sys.argv[2], reviews=False).unchanged
print(imported - start, time.perf_counter() - start)
"""


def transcript(folder: Path, mb: float) -> tuple[Path, int]:
    """A transcript of about ``mb`` MB, and the end of the last line before its last 1%."""
    path = folder / f"t-{mb:g}.jsonl"
    path.unlink(missing_ok=True)  # a Writer appends: start each one afresh
    Writer(path).grow(int(mb * 1e6))
    data = path.read_bytes()
    return path, data.rindex(b"\n", 0, int(len(data) * (1 - GROWTH))) + 1


def _journal(folder: Path, path: Path, cut: int) -> Path:
    """A journal holding the transcript's first ``cut`` bytes."""
    part = folder / f"part-{path.name}"
    part.write_bytes(path.read_bytes()[:cut])
    db = folder / f"part-{path.stem}-{cut}.db"
    db.unlink(missing_ok=True)
    with eventstore.open(db) as journal:
        ingest(journal, part, reviews=False)
    part.unlink()
    return db


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000


def growth(folder: Path, mb: float, reps: int) -> tuple[float, float, int]:
    """Median ms of a full ingest and of the re-ingest after 1% growth, and the events
    the session then holds."""
    path, cut = transcript(folder, mb)
    base = _journal(folder, path, cut)
    full: list[float] = []
    grown: list[float] = []
    events = 0
    for n in range(reps):
        empty = folder / f"full-{mb:g}-{n}.db"
        copy = folder / f"grown-{mb:g}-{n}.db"
        shutil.copy(base, copy)
        with eventstore.open(empty) as journal:
            full.append(_timed(lambda: ingest(journal, path, reviews=False)))
        with eventstore.open(copy) as journal:
            grown.append(_timed(lambda: ingest(journal, path, reviews=False)))
            events = journal.session(ingest(journal, path, reviews=False).session_id).version
        empty.unlink()
        copy.unlink()
    return statistics.median(full), statistics.median(grown), events


def unchanged(folder: Path, mb: float, reps: int) -> tuple[float, float]:
    """Median ms a new process takes to import the ingest (the cold start), and to import
    it and re-ingest a file the journal holds whole, as the process itself times them (so
    that the start of the interpreter, which varies most on a busy machine, is left out)."""
    path, _ = transcript(folder, mb)
    db = _journal(folder, path, path.stat().st_size)
    cold: list[float] = []
    again: list[float] = []
    for _ in range(reps):
        command = [sys.executable, "-I", "-c", UNCHANGED, str(db), str(path)]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        imported, done = (float(x) * 1000 for x in out.split())
        cold.append(imported)
        again.append(done)
    return statistics.median(cold), statistics.median(again)


def rows(tmp: Path, quick: bool) -> list[dict[str, Any]]:
    """The bench rows (see the module doc); ``quick``: small transcripts, few rounds."""
    logging.getLogger("tierlog").setLevel(logging.ERROR)
    sizes = (0.1, 0.2) if quick else (1.0, 2.0, 4.0, 8.0)
    reps = 2 if quick else 5
    main = 0.2 if quick else 4.0
    full, grown = (round(ms, 1) for ms in growth(tmp, main, reps)[:2])
    cold, again = (round(ms, 1) for ms in unchanged(tmp, main, 2 if quick else 9))
    points = [[events, ms] for events, ms in _series(tmp, sizes, reps)]
    label = f"re-ingest after {GROWTH:.0%} growth (ms)"
    return [
        {
            "row": f"ingest: {GROWTH:.0%} growth vs full ({main:g} MB transcript)",
            "floor": full,
            "tierlog": grown,
            "unit": "ms",
            "ratio": full / grown,
            "target": f">= {1 / TARGET_SHARE:.0f}x (<= {TARGET_SHARE:.0%} of full)",
            "met": grown <= TARGET_SHARE * full,
            "series": {"label": label, "x": "log length", "points": points},
        },
        {
            "row": f"ingest: unchanged vs cold start of the ingest ({main:g} MB transcript)",
            "floor": cold,
            "tierlog": again,
            "unit": "ms",
            "ratio": cold / again,
            "target": f"<= floor + {TARGET_ABOVE_MS:.0f} ms",
            "met": again - cold <= TARGET_ABOVE_MS,
        },
    ]


def _series(tmp: Path, sizes: tuple[float, ...], reps: int) -> list[tuple[int, float]]:
    out = []
    for mb in sizes:
        _, grown, events = growth(tmp, mb, reps)
        out.append((events, round(grown, 1)))
    return out


def main() -> None:
    """Print the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small transcripts, few rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows(Path(tmp), args.quick):
            series = row.pop("series", None)
            print(
                f"{row['row']}: floor {row['floor']} {row['unit']}, tierlog {row['tierlog']}"
                f" {row['unit']}, ratio {row['ratio']:.2f} (target {row['target']})"
                f" {'met' if row['met'] else 'MISSED'}"
            )
            if series:
                shown = ", ".join(f"{x:,} events: {y} ms" for x, y in series["points"])
                print(f"  {series['label']}: {shown}")


if __name__ == "__main__":
    main()
