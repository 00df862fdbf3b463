"""How long ``tierlog ingest`` takes on a real transcript (target: under 5 s for 3 MB).

    .venv/bin/python bench/ingest_time.py [TRANSCRIPT] [--repeat N]

Without a file it times the 2.76 MB test fixture (decompressed into a temporary
folder). Each run ingests into a fresh journal (``synchronous="full"``, the
default) and then ingests the same file again (the unchanged check).
"""

from __future__ import annotations

import argparse
import gzip
import logging
import statistics
import tempfile
import time
from pathlib import Path

import eventstore

FIXTURE = (
    Path(__file__).resolve().parent.parent
    / "tests/data/claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"
)


def _time(folder: Path, transcript: Path, run: int) -> tuple[float, float, int]:
    with eventstore.open(folder / f"run{run}.db") as journal:
        start = time.perf_counter()
        result = eventstore.ingest(journal, transcript)
        first = time.perf_counter() - start
        start = time.perf_counter()
        eventstore.ingest(journal, transcript)
        again = time.perf_counter() - start
    return first, again, result.events


def main() -> None:
    """Print the median ingest and re-ingest times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcript", nargs="?", type=Path, help="a Claude Code .jsonl")
    parser.add_argument("--repeat", type=int, default=5, help="runs (default: %(default)s)")
    args = parser.parse_args()
    logging.getLogger("tierlog").setLevel(logging.ERROR)  # the refused marker is expected
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        transcript = args.transcript
        if transcript is None:
            transcript = folder / FIXTURE.name.removesuffix(".gz")
            transcript.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
        runs = [_time(folder, transcript, i) for i in range(args.repeat)]
    size = (
        transcript.stat().st_size if args.transcript else len(gzip.decompress(FIXTURE.read_bytes()))
    )
    first = statistics.median(r[0] for r in runs)
    again = statistics.median(r[1] for r in runs)
    print(
        f"{transcript.name}: {size / 1e6:.2f} MB, {runs[0][2]:,} events;"
        f" ingest {first:.3f} s, re-ingest (unchanged) {again:.3f} s"
        f" (median of {args.repeat}; target < 5 s)"
    )


if __name__ == "__main__":
    main()
