"""The values the storage port's methods take and give: heads, rows, query results,
snapshots (the audits' rows are in ``_audit_rows``).

Each is the same for every backend. ``AuditQueries`` turns a SQL backend's audit
queries into the typed rows (``summaries`` and ``audit_rows``), so a backend gives
only its SQL text and how it runs a query; the rows' classes are made when an audit
first asks for them, not when a journal is opened.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeVar

import attrs

from reducers import InvalidEvent

if TYPE_CHECKING:
    from eventstore._store._audit_rows import AuditRows, SessionSummary

Row = tuple[str, int, str, int, str, str, str, str]
"""A row's values in insert order: ``Recorded`` without ``seq`` (``recorded[1:]``):
``(session_id, version, type, schema_version, payload, recorded_at, prev_hash, hash)``."""


_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


_CHECKED: set[str] = set()  # ids that passed (a commit's append checks its session's id)


def check_session_id(session_id: object) -> str:
    """``session_id`` if a journal can store it and open it again (it names spill
    folders and command-line arguments), else InvalidEvent. Ids that passed are
    remembered (plain ``str`` only, at most 4,096): a live session's append matches
    its id once."""
    if type(session_id) is str and session_id in _CHECKED:
        return session_id
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise InvalidEvent(
            f"session id {session_id!r}: use 1-128 of A-Z a-z 0-9 . _ : @ -, not starting with"
            " punctuation"
        )
    if type(session_id) is str:
        if len(_CHECKED) >= 4096:
            _CHECKED.clear()
        _CHECKED.add(session_id)
    return session_id


class Head(NamedTuple):
    """A session's last version and its hash (``0`` and the genesis hash when empty)."""

    version: int
    hash: str


# the audit rows, which lived here in 0.2: pickles made then name this module
_MOVED = frozenset(
    (
        "AuditRows",
        "CompactionRefusalRow",
        "FallbackRow",
        "InvalidationRow",
        "MarkerRefusalRow",
        "NoteRow",
        "SessionSummary",
    )
)


def __getattr__(name: str) -> Any:
    """An audit row's class under the module it was pickled from (``_audit_rows``)."""
    if name in _MOVED:
        from eventstore._store import _audit_rows

        return getattr(_audit_rows, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        from eventstore._store._audit_rows import SessionSummary

        return [SessionSummary(**row) for row in self._dicts(self.SUMMARIES_SQL)]

    def audit_rows(self, session_id: str) -> AuditRows:
        """Refusals, invalidations and raw fallbacks of one session, in version order."""
        from eventstore._store._audit_rows import (
            AuditRows,
            CompactionRefusalRow,
            FallbackRow,
            InvalidationRow,
            MarkerRefusalRow,
            NoteRow,
        )

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
