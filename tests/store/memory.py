"""A backend as a third party would write one, from tierlog's public names only: the
event log, its fast reads and the snapshot cache, kept in a process's memory.

A transaction keeps a copy of everything as it was at its start (and one per
savepoint), and puts it back on a rollback. Two recorders on one ``Memory``
(``another()``) are two writers on one journal. Each class at the end is the same
backend with one bug, for the contract suite to catch (``test_third_party.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import eventstore
from eventstore import (
    GENESIS,
    AppendPath,
    Event,
    Head,
    InvalidArgument,
    JournalError,
    Recorded,
    StoredSnapshot,
)

_Snapshot = tuple[int, str, bytes, dict[tuple[str, int], bytes]]
_State = tuple[dict[str, list[Recorded]], dict[str, _Snapshot]]


class Memory:
    """What one journal holds: each session's rows and snapshot, and the next seq."""

    def __init__(self) -> None:
        self.events: dict[str, list[Recorded]] = {}
        self.snapshots: dict[str, _Snapshot] = {}
        self.seq = itertools.count(1)


class _Copies:
    """The transactions' statements: a copy of the state per open block."""

    def __init__(self, store: MemoryRecorder) -> None:
        self.store = store
        self.saved: list[_State] = []

    def begin(self) -> None:
        self.saved = [self.store.copy()]

    def commit(self) -> None:
        self.saved = []

    def rollback(self) -> None:
        self.store.restore(self.saved[0])
        self.saved = []

    def savepoint(self, name: str) -> None:
        self.saved.append(self.store.copy())

    def release(self, name: str) -> None:
        self.saved.pop()

    def rollback_to(self, name: str) -> None:
        self.store.restore(self.saved.pop())


class MemoryRecorder(AppendPath):
    """Events, reads and snapshots in a dict: ``EventLog``, ``ReplayReads`` and
    ``SnapshotStore``."""

    location = "memory"
    STATEMENTS: type[_Copies] = _Copies

    def __init__(self, memory: Memory | None = None) -> None:
        super().__init__(self.STATEMENTS(self), clock=lambda: "2026-01-01T00:00:00+00:00")
        self.memory = memory or Memory()
        self.closed = False

    def another(self) -> MemoryRecorder:
        """A second recorder on this one's memory: another writer."""
        return type(self)(self.memory)

    @property
    def events(self) -> dict[str, list[Recorded]]:
        return self.memory.events

    @property
    def snapshots(self) -> dict[str, _Snapshot]:
        return self.memory.snapshots

    def copy(self) -> _State:
        self.check()
        return {k: list(v) for k, v in self.events.items()}, dict(self.snapshots)

    def restore(self, state: _State) -> None:
        self.memory.events, self.memory.snapshots = state

    def check(self) -> None:
        if self.closed:
            raise JournalError("the memory journal is closed")

    def close(self) -> None:
        self.closed = True

    # -- the append path's hooks ---------------------------------------------------------
    def read_head(self, session_id: str) -> Head:
        self.check()
        rows = self.events.get(session_id)
        return Head(rows[-1].version, rows[-1].hash) if rows else Head(0, GENESIS)

    def insert(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self.check()
        log = self.events.setdefault(rows[0][0], [])
        if log and log[-1].version >= rows[0][1]:
            raise eventstore.ConcurrencyError(f"version {rows[0][1]} is taken")
        log += [Recorded(next(self.memory.seq), *row) for row in rows]

    # -- EventLog and ReplayReads ------------------------------------------------------
    def read(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[Recorded]:
        first, last = _version(start), None if stop is None else _version(stop)
        self.check()
        rows = list(self.events.get(session_id, ()))  # the rows stored when the read began
        return (
            row for row in rows if first <= row.version and (last is None or row.version <= last)
        )

    def sessions(self) -> list[str]:
        self.check()
        return sorted(sid for sid, rows in self.events.items() if rows)

    def read_payloads(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[tuple[str, str]]:
        return ((row.type, row.payload) for row in self.read(session_id, start=start, stop=stop))

    def turn_payloads(self, session_id: str, first: int, last: int) -> Iterator[str]:
        rows = self.read(session_id, start=first, stop=last)
        return (row.payload for row in rows if row.type == "TurnAppended")

    def hash_at(self, session_id: str, version: int) -> str | None:
        found = [row.hash for row in self.read(session_id) if row.version == version]
        return found[0] if found else None

    # -- SnapshotStore -----------------------------------------------------------------
    def save_snapshot(
        self,
        session_id: str,
        version: int,
        sha256: str,
        header: bytes,
        chunks: Iterable[tuple[str, int, bytes]],
        *,
        replace: bool = False,
    ) -> None:
        with self.transaction():
            kept = {} if replace else dict(self.snapshots.get(session_id, (0, "", b"", {}))[3])
            kept.update({(name, k): data for name, k, data in chunks})
            self.snapshots[session_id] = (version, sha256, header, kept)

    def load_snapshot(self, session_id: str) -> StoredSnapshot | None:
        self.check()
        if session_id not in self.snapshots:
            return None
        version, sha256, header, chunks = self.snapshots[session_id]
        rows = iter([(name, chunks[name, k]) for name, k in sorted(chunks)])
        return StoredSnapshot(version=version, sha256=sha256, header=header, chunks=rows)


def _version(bound: object) -> int:
    if type(bound) is not int or not 0 <= bound < 2**63:
        raise InvalidArgument(f"a read's bounds are versions, not {bound!r}")
    return bound


# -- one bug each ------------------------------------------------------------------------
class _Forgets(_Copies):
    def rollback_to(self, name: str) -> None:
        self.saved.pop()  # the bug: the savepoint's writes stay


class Forgetful(MemoryRecorder):
    """A memory journal whose failed savepoints keep their writes."""

    STATEMENTS = _Forgets


class _Drops(_Copies):
    def release(self, name: str) -> None:
        self.store.restore(self.saved.pop())  # the bug: a released savepoint is undone


class Dropping(MemoryRecorder):
    """A memory journal whose savepoints lose their writes when they succeed."""

    STATEMENTS = _Drops


class _Keeps(_Copies):
    def rollback_to(self, name: str) -> None:
        self.store.restore(self.saved[-1])  # the bug: the copy stays on the stack


class Misnested(MemoryRecorder):
    """A memory journal whose failed savepoint leaves its copy for the next one."""

    STATEMENTS = _Keeps


class Ignorant(MemoryRecorder):
    """A memory journal that appends at whatever version the session is."""

    def append(
        self,
        session_id: str,
        events: Sequence[Event],
        *,
        expected_version: int,
        head_hash: str | None = None,
    ) -> int:
        with self.transaction():
            head = self.head(session_id)
            return super().append(
                session_id, events, expected_version=head.version, head_hash=head.hash
            )


class Duplicating(MemoryRecorder):
    """A memory journal that stores a row at a version the session already has."""

    def insert(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self.events.setdefault(rows[0][0], []).extend(
            Recorded(next(self.memory.seq), *row) for row in rows
        )


class ByText(MemoryRecorder):
    """A memory journal whose replay reads order rows by the text of their version."""

    def read_payloads(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[tuple[str, str]]:
        rows = sorted(self.read(session_id, start=start, stop=stop), key=lambda r: str(r.version))
        return ((row.type, row.payload) for row in rows)


class Stale(MemoryRecorder):
    """A memory journal that remembers each head it read and never reads it again."""

    def __init__(self, memory: Memory | None = None) -> None:
        super().__init__(memory)
        self.heads: dict[str, Head] = {}

    def read_head(self, session_id: str) -> Head:
        if session_id not in self.heads:
            self.heads[session_id] = super().read_head(session_id)
        return self.heads[session_id]

    def insert(self, rows: Sequence[tuple[Any, ...]]) -> None:
        super().insert(rows)
        self.heads[rows[0][0]] = Head(rows[-1][1], rows[-1][7])

    def restore(self, state: _State) -> None:
        super().restore(state)
        self.heads.clear()  # its own rollbacks it does not miss; another writer's commits
