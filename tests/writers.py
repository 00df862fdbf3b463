"""Writer processes for the concurrency and crash tests (run with ``python -m``)."""

from __future__ import annotations

import random
import resource
import signal
import sys
import time
from pathlib import Path

import attrs

import eventstore
import reducers as r
from eventstore import ConcurrencyError
from eventstore._ops._transfer import import_file
from eventstore._sqlite._recorder import SqliteRecorder
from tests.helpers import config, fill, refuse, refusing_session


def contend(db: str, session_id: str, name: str, count: int) -> None:
    """Append ``count`` events at the head, retrying on ConcurrencyError; print conflicts.

    Each append reads the head, "thinks" a little, then appends at that version,
    as a runtime deciding on what it read would. Prints "ready", then starts when
    ``<db>.go`` exists.
    """
    store = SqliteRecorder(db, synchronous="normal", busy_timeout=30.0)
    print("ready", flush=True)
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
    if version == 0:
        started = r.SessionStarted(**attrs.asdict(config()))
        version = store.append(session_id, [started], expected_version=0)
    while True:
        event = r.TurnAppended(index=version - 1, role="tool", content="x" * 200, tokens=50)
        version = store.append(session_id, [event], expected_version=version)
        print(version, flush=True)


def refusals(db: str, session_id: str) -> None:
    """Refuse compactions forever (each spills the transcript), printing each committed
    version: the parent kills us, often between a spill's write and its commit."""
    with eventstore.open(db) as journal:
        s = refusing_session(journal, session_id)
        while True:
            fill(s, 1)
            refuse(s)
            print(s.version, flush=True)


def imports(db: str, exported: str) -> None:
    """Import one exported session under new ids forever, printing each id committed."""
    with eventstore.open(db) as journal:
        for i in range(10**9):
            with open(exported, encoding="utf-8") as f:
                import_file(journal, f, rename=f"imp-{i}")
            print(f"imp-{i}", flush=True)


def fsize(db: str, session_id: str, limit: int) -> None:
    """Refuse one compaction with files capped at ``limit`` bytes; print the error."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    with eventstore.open(db) as journal:
        try:
            refuse(journal.session(session_id))
        except eventstore.JournalError as exc:
            print(f"{type(exc).__name__}: {exc}")


def opens(db: str, readonly: bool, seconds: float) -> None:
    """Open ``db`` (created by whoever is first) again and again once ``<db>.go``
    exists; print each distinct error once."""
    go = Path(f"{db}.go")
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    seen: set[str] = set()
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            eventstore.open(db, readonly=readonly).close()
        except eventstore.JournalError as exc:
            message = f"{type(exc).__name__}: {exc}"
            if message not in seen:
                seen.add(message)
                print(message, flush=True)


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "opens":
        opens(args[0], args[1] == "ro", float(args[2]))
    elif mode == "contend":
        contend(args[0], args[1], args[2], int(args[3]))
    elif mode == "refusals":
        refusals(args[0], args[1])
    elif mode == "imports":
        imports(args[0], args[1])
    elif mode == "fsize":
        fsize(args[0], args[1], int(args[2]))
    else:
        stream(args[0], args[1])
