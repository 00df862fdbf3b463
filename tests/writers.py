"""Writer processes for the concurrency and crash tests (run with ``python -m``)."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import reducers as r
from eventstore import ConcurrencyError
from eventstore._sqlite import SqliteRecorder


def contend(db: str, session_id: str, name: str, count: int) -> None:
    """Append ``count`` events at the head, retrying on ConcurrencyError; print conflicts.

    Each append reads the head, "thinks" a little, then appends at that version,
    as a runtime deciding on what it read would. Starts when ``<db>.go`` exists.
    """
    store = SqliteRecorder(db, synchronous="normal", busy_timeout=30.0)
    go = Path(f"{db}.go")
    while not go.exists():
        time.sleep(0.001)
    conflicts = 0
    for i in range(count):
        while True:
            version, _ = store.head(session_id)
            time.sleep(random.random() / 400)  # wide enough to overlap on a busy machine
            event = r.CallOpened(call_id=f"{name}-{i}", kind="tool_call", name=name)
            try:
                store.append(session_id, [event], expected_version=version)
                break
            except ConcurrencyError:
                conflicts += 1
    print(conflicts, flush=True)


def stream(db: str, session_id: str) -> None:
    """Append turns forever, printing each committed version: the parent kills us."""
    store = SqliteRecorder(db, synchronous="full")
    version = store.head(session_id)[0]
    while True:
        event = r.TurnAppended(index=version, role="tool", content="x" * 200, tokens=50)
        version = store.append(session_id, [event], expected_version=version)
        print(version, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "contend":
        contend(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        stream(sys.argv[2], sys.argv[3])
