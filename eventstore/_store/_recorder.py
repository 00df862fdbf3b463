"""The storage port: everything tierlog asks of a database, and nothing more.

A ``Recorder`` appends events at an expected version inside one write
transaction, streams them back, keeps the snapshot cache and answers the audit
queries. Every SQL string lives in a recorder; nothing above this port holds a
connection. ``SqliteRecorder`` is the embedded implementation,
``PostgresRecorder`` the server one; each backend passes the same contract tests
(``tests/store/test_recorder.py``).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, NamedTuple, Protocol, TypeVar

import attrs

from eventstore._errors import ConcurrencyError
from eventstore._store._chain import Recorded, check_links, link_rows
from reducers import Event, InvalidArgument, InvalidEvent, JournalError, require_count

Row = tuple[str, int, str, int, str, str, str, str]
"""A row's values in insert order: ``Recorded`` without ``seq`` (``recorded[1:]``)."""


class Head(NamedTuple):
    """A session's last version and its hash (``0`` and the genesis hash when empty)."""

    version: int
    hash: str


@attrs.frozen(kw_only=True)
class SessionSummary:
    """One line of ``tierlog sessions``."""

    session_id: str
    events: int
    turns: int
    refusals: int
    invalidations: int
    raw_fallbacks: int


@attrs.frozen(kw_only=True)
class CompactionRefusalRow:
    """A ``CompactionRefused`` event, as the ``compaction_refusals`` view shows it."""

    version: int
    node_id: str
    action: str
    rules: str
    violations: str  # the violations as JSON text


@attrs.frozen(kw_only=True)
class MarkerRefusalRow:
    """A ``MarkerRefused`` event, as the ``marker_refusals`` view shows it."""

    version: int
    marker_id: str
    node_id: str
    rules: str
    violations: str


@attrs.frozen(kw_only=True)
class InvalidationRow:
    """A ``MarkerInvalidated`` event."""

    version: int
    marker_id: str
    rule: str
    reason: str


@attrs.frozen(kw_only=True)
class FallbackRow:
    """A resume that fell back to the raw checkpoint."""

    version: int
    marker_id: str
    checkpoint_at: int | None
    reason: str


@attrs.frozen(kw_only=True)
class NoteRow:
    """A ``Noted`` event: a guess, skip or fallback made reading someone else's data."""

    version: int
    kind: str
    line: int | None
    count: int
    text: str


@attrs.frozen(kw_only=True)
class AuditRows:
    """What the audit views say about one session."""

    compaction_refusals: tuple[CompactionRefusalRow, ...]
    marker_refusals: tuple[MarkerRefusalRow, ...]
    marker_invalidations: tuple[InvalidationRow, ...]
    raw_fallbacks: tuple[FallbackRow, ...]
    notes: tuple[NoteRow, ...] = ()


def _nothing() -> None:
    return None


@attrs.frozen(kw_only=True)
class QueryResult:
    """The rows of a read-only query, streamed, with their column names.

    The query's limits hold until the rows are exhausted or the result is closed
    (it is a context manager).
    """

    columns: tuple[str, ...]
    rows: Iterable[tuple[object, ...]]
    done: Callable[[], None] = attrs.field(default=_nothing, repr=False)

    def close(self) -> None:
        """Stop the query and lift its limits (idempotent)."""
        self.done()

    def __enter__(self) -> QueryResult:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@attrs.frozen(kw_only=True)
class StoredSnapshot:
    """A snapshot as stored: its version and state sha256, header and ledger chunks."""

    version: int
    sha256: str
    header: bytes
    chunks: Iterator[tuple[str, bytes]]


class Recorder(Protocol):
    """The storage port every backend implements."""

    readonly: bool

    @property
    def location(self) -> str:
        """Where the journal lives, for messages (a path, or a URL without secrets)."""

    def close(self) -> None:
        """Release the connection (idempotent)."""

    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction; nested, a savepoint. Commits on success."""

    def head(self, session_id: str) -> Head:
        """The session's last version and hash."""

    def append(
        self,
        session_id: str,
        events: Sequence[Event],
        *,
        expected_version: int,
        head_hash: str | None = None,
    ) -> int:
        """Append after ``expected_version`` (``ConcurrencyError`` otherwise); new version."""

    def append_recorded(self, session_id: str, rows: Sequence[Recorded]) -> int:
        """Insert rows recorded elsewhere verbatim (versions, payloads, times, hashes) after
        the head, in one transaction; each link is checked against the head first
        (``IntegrityError``), and a head that moved is a ``ConcurrencyError``."""

    def read(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[Recorded]:
        """Rows ``start..stop`` (inclusive) in version order, streamed."""

    def read_payloads(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[tuple[str, str]]:
        """``(type, payload)`` of rows ``start..stop``: the replay hot path."""

    def turn_payloads(self, session_id: str, first: int, last: int) -> Iterator[str]:
        """The payloads of the turns stored at versions ``first..last``, in order."""

    def sessions(self) -> list[str]:
        """Every session id, sorted."""

    def summaries(self) -> list[SessionSummary]:
        """Every session with its event, refusal and invalidation counts."""

    def audit_rows(self, session_id: str) -> AuditRows:
        """Refusals, invalidations and raw fallbacks of one session, in version order."""

    def on_rollback(self, undo: Callable[[], None]) -> None:
        """Run ``undo`` if the open transaction (or savepoint) rolls back instead of
        committing (a spill file written for the decision goes with it)."""

    def hash_at(self, session_id: str, version: int) -> str | None:
        """The hash of the session's event at ``version``, or ``None`` if there is none."""

    def spill_handles(self) -> Iterator[str]:
        """Every spill handle any session recorded (distinct)."""

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
        (``replace``: every chunk, the old ones dropped first)."""

    def load_snapshot(self, session_id: str) -> StoredSnapshot | None:
        """The session's snapshot, if one was saved."""

    def query(
        self, sql: str, *, timeout: float | None, heap_limit: int | None = None
    ) -> QueryResult:
        """Run one read-only query, its rows streamed; InvalidEvent for a failing or
        writing one, or one that runs past ``timeout`` seconds or ``heap_limit`` bytes."""

    def heads(self) -> dict[str, Head]:
        """Every session's head, by session id in order (what a witness keeps)."""

    def attached(self, source: Recorder) -> AbstractContextManager[None]:
        """For the block (entered outside a transaction), let :meth:`copy_session` read
        ``source`` inside the database if the backend can; otherwise nothing."""

    def copy_session(self, source: Recorder, session_id: str) -> None:
        """Insert ``session_id``'s rows from ``source`` verbatim, hashes and all, in the
        caller's transaction (``import`` copies a session decided in a scratch journal)."""

    def integrity_problems(self) -> list[str]:
        """What the database's own integrity check reports (empty when sound)."""


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


_Row = TypeVar("_Row")


class AuditQueries(abc.ABC):
    """``summaries`` and ``audit_rows`` for a backend that gives its SQL text and how
    to run a query as dicts; the typed rows are the same for every backend."""

    SUMMARIES_SQL: ClassVar[str]
    AUDIT_SQL: ClassVar[tuple[str, str, str, str, str]]  # each takes the session id

    @abc.abstractmethod
    def _dicts(self, sql: str, params: tuple[object, ...] = ()) -> Iterable[dict[str, Any]]:
        """The rows of ``sql`` as dicts keyed by column name."""

    def summaries(self) -> list[SessionSummary]:
        """Every session with its event, refusal and invalidation counts."""
        return [SessionSummary(**row) for row in self._dicts(self.SUMMARIES_SQL)]

    def audit_rows(self, session_id: str) -> AuditRows:
        """Refusals, invalidations and raw fallbacks of one session, in version order."""
        sql = self.AUDIT_SQL
        return AuditRows(
            compaction_refusals=self._typed(CompactionRefusalRow, sql[0], session_id),
            marker_refusals=self._typed(MarkerRefusalRow, sql[1], session_id),
            marker_invalidations=self._typed(InvalidationRow, sql[2], session_id),
            raw_fallbacks=self._typed(FallbackRow, sql[3], session_id),
            notes=self._typed(NoteRow, sql[4], session_id),
        )

    def _typed(self, cls: type[_Row], sql: str, session_id: str) -> tuple[_Row, ...]:
        return tuple(cls(**row) for row in self._dicts(sql, (session_id,)))


def expect_version(session_id: str, version: int, expected: int) -> None:
    """ConcurrencyError unless the session is at the version the writer expects."""
    if version != expected:
        raise ConcurrencyError(
            f"session {session_id!r} is at version {version}, expected {expected}"
        )


class AppendPath(abc.ABC):
    """``append`` and ``append_recorded`` for a backend that gives its transactions,
    its head reads and how it inserts rows: the rules of the append path (the head a
    batch links to, the expected version, the links of rows recorded elsewhere) are
    the same for every backend.

    A batch always links to the head as read under the open transaction's lock: the
    head the backend holds from a read in this transaction (``_held``), else a fresh
    read. A caller's ``head_hash`` and ``expected_version`` are checked against it,
    never taken on trust."""

    _clock: Callable[[], str]

    @abc.abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction; nested, a savepoint."""

    @abc.abstractmethod
    def head(self, session_id: str) -> Head:
        """The session's last version and hash (inside a write transaction, under the
        backend's lock for the session)."""

    @abc.abstractmethod
    def _joined(self) -> bool:
        """Whether a write transaction of the caller's is open."""

    @abc.abstractmethod
    def _held(self, session_id: str) -> Head | None:
        """The session's head as read (or written) in the open transaction, under its
        lock for the session, or ``None``: the head is read again."""

    @abc.abstractmethod
    def _write_rows(self, session_id: str, rows: Sequence[Row]) -> None:
        """Insert ``rows`` (linked and checked) in the open transaction."""

    def append(
        self,
        session_id: str,
        events: Sequence[Event],
        *,
        expected_version: int,
        head_hash: str | None = None,
    ) -> int:
        """Append ``events`` atomically after ``expected_version``; returns the new version.

        Raises :class:`ConcurrencyError` if the session is at another version.
        Joins the caller's transaction when one is open; a caller that has read
        the head in that transaction may pass its hash as ``head_hash`` (checked: a
        hash of another head is a ConcurrencyError too).
        """
        require_count("expected_version", expected_version)
        if self._joined():
            return self._insert(session_id, events, expected_version, head_hash)
        if head_hash is not None:
            raise JournalError("head_hash is only trusted inside the caller's transaction")
        with self.transaction():
            return self._insert(session_id, events, expected_version, None)

    def _insert(
        self, session_id: str, events: Sequence[Event], expected_version: int, prev: str | None
    ) -> int:
        head = self._held(session_id) if prev is not None else None
        version, last = head if head is not None else self.head(session_id)
        expect_version(session_id, version, expected_version)
        if prev is not None and prev != last:
            raise ConcurrencyError(
                f"session {session_id!r}: head_hash is not the hash of its version {version}"
            )
        rows = link_rows(session_id, version, last, events, self._clock())
        self._write_rows(session_id, rows)
        return version + len(rows)

    def append_recorded(self, session_id: str, rows: Sequence[Recorded]) -> int:
        """Insert rows recorded elsewhere, verbatim, after this journal's head; each
        link is checked first (IntegrityError), a moved head is a ConcurrencyError."""
        rows = list(rows)  # checked, then written: an iterator would be spent by the check
        for row in rows:
            if not isinstance(row, Recorded):
                raise InvalidArgument(
                    f"append_recorded takes Recorded rows, not {type(row).__name__}"
                )
        with self.transaction():
            last = check_links(session_id, self.head(session_id), rows)
            self._write_rows(session_id, [row[1:] for row in rows])
        return last
