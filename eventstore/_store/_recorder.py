"""The storage port: everything tierlog asks of a database, and nothing more, in roles.

A backend implements the roles as small protocols; ``Recorder`` is all of them, what
a journal needs. Every SQL string lives in a backend; nothing above this port holds a
connection. ``SqliteRecorder`` is the embedded backend, ``PostgresRecorder`` the
server one, both built on ``AppendPath`` (``_append``: the append path's rules, one
``insert`` hook); each passes the contract suite of every role (``eventstore.testing``).

- ``EventLog``: append at an expected version inside a write transaction, read back.
- ``ReplayReads``: what replay and decisions read fast (payloads, turns, a hash).
- ``SnapshotStore``: the snapshot cache's bytes.
- ``AuditReads``: counts, audit rows, read-only SQL, heads, spill handles, integrity.
- ``Transfer``: rows recorded elsewhere, copied verbatim (``ship``, ``import``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from eventstore._store._chain import Recorded
from eventstore._store._rows import Head, QueryResult, StoredSnapshot
from reducers import Event, InvalidArgument, InvalidEvent, require_count

if TYPE_CHECKING:
    from eventstore._store._audit_rows import AuditRows, SessionSummary


class EventLog(Protocol):
    """Each session's events: appended at an expected version inside one write
    transaction, hash-chained, and read back in version order."""

    @property
    def location(self) -> str:
        """Where the journal lives, for messages (a path, or a URL without secrets)."""

    def close(self) -> None:
        """Release the connection (idempotent); any later use is a JournalError."""

    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction; nested, a savepoint. Commits on success."""

    def on_rollback(self, undo: Callable[[], None]) -> None:
        """Run ``undo`` if the open transaction (or savepoint) rolls back instead of
        committing (a spill file written for the decision goes with it)."""

    def head(self, session_id: str) -> Head:
        """The session's last version and hash; inside a write transaction, read under
        a lock that keeps other writers off the session until the transaction ends."""

    def append(
        self,
        session_id: str,
        events: Sequence[Event],
        *,
        expected_version: int,
        head_hash: str | None = None,
    ) -> int:
        """Append after ``expected_version`` (``ConcurrencyError`` otherwise); new version.
        ``head_hash``: the caller read the head in its open transaction (checked)."""

    def read(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[Recorded]:
        """Rows ``start..stop`` (inclusive) in version order, streamed (without
        ``stop``, up to the last version stored when the read begins)."""

    def sessions(self) -> list[str]:
        """Every session id, sorted."""


class ReplayReads(Protocol):
    """The reads replay and decisions make often, without decoding a whole row."""

    def read_payloads(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[tuple[str, str]]:
        """``(type, payload)`` of rows ``start..stop``: the replay hot path."""

    def turn_payloads(self, session_id: str, first: int, last: int) -> Iterator[str]:
        """The payloads of the turns stored at versions ``first..last``, in order."""

    def hash_at(self, session_id: str, version: int) -> str | None:
        """The hash of the session's event at ``version``, or ``None`` if there is none."""


class SnapshotStore(Protocol):
    """The bytes of the snapshot cache: a header and ledger chunks per session."""

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
        """Replace the session's snapshot header and the ledger chunks that changed
        (``replace``: every chunk, the old ones dropped first); in the open
        transaction, or in one of its own."""

    def load_snapshot(self, session_id: str) -> StoredSnapshot | None:
        """The session's snapshot, if one was saved."""


class AuditReads(Protocol):
    """What ``sessions``, ``audit``, ``sql``, ``head`` and ``verify`` read."""

    def summaries(self) -> list[SessionSummary]:
        """Every session with its event, refusal and invalidation counts."""

    def audit_rows(self, session_id: str) -> AuditRows:
        """Refusals, invalidations and raw fallbacks of one session, in version order."""

    def query(
        self, sql: str, *, timeout: float | None, heap_limit: int | None = None
    ) -> QueryResult:
        """Run one read-only query, its rows streamed; InvalidArgument for a failing or
        writing one, or one that runs past ``timeout`` seconds or ``heap_limit`` bytes."""

    def heads(self) -> dict[str, Head]:
        """Every session's head, by session id in order (what a witness keeps)."""

    def spill_handles(self) -> Iterator[str]:
        """Every spill handle any session recorded (distinct)."""

    def integrity_problems(self) -> list[str]:
        """What the database's own integrity check reports (empty when sound)."""

    def view_notes(self) -> list[str]:
        """Audit views as an earlier release made them, which the next writer's open
        remakes (notes, not faults: a read-only open cannot remake them)."""


class Transfer(Protocol):
    """Rows recorded elsewhere, written verbatim: ``tierlog ship`` and ``import``."""

    def append_recorded(self, session_id: str, rows: Sequence[Recorded]) -> int:
        """Insert rows recorded elsewhere verbatim (versions, payloads, times, hashes) after
        the head, in one transaction; each link is checked against the head first
        (``IntegrityError``), and a head that moved is a ``ConcurrencyError``."""

    def attached(self, source: EventLog) -> AbstractContextManager[None]:
        """For the block (entered outside a transaction), let :meth:`copy_session` read
        ``source`` inside the database if the backend can; otherwise nothing."""

    def copy_session(self, source: EventLog, session_id: str) -> None:
        """Insert ``session_id``'s rows from ``source`` verbatim, hashes and all, in the
        caller's transaction (``import`` copies a session decided in a scratch journal)."""


class Recorder(EventLog, ReplayReads, SnapshotStore, AuditReads, Transfer, Protocol):
    """Every role: what a journal asks of its database."""


def seconds(timeout: object, name: str = "timeout") -> float:
    """``timeout`` as a number of seconds, checked for every backend: a finite number
    above zero, else InvalidArgument (``nan`` and ``inf`` included)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise InvalidArgument(f"{name} must be a number of seconds, not {timeout!r}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise InvalidArgument(f"{name} must be a positive, finite number of seconds, not {timeout}")
    return float(timeout)


def read_range(start: object, stop: object) -> tuple[int, int | None]:
    """A read's ``start`` and ``stop``, checked for every backend: versions from 0 to
    2**63-1 (``stop`` may be ``None``), else InvalidArgument."""
    try:
        return require_count("start", start), None if stop is None else require_count("stop", stop)
    except InvalidEvent as exc:
        raise InvalidArgument(str(exc)) from None
