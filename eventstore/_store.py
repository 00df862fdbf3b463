"""The SQLite event store: append with an expected version, stream, check the chain.

It knows nothing of tiers. Every write is one ``BEGIN IMMEDIATE`` transaction
(see ``docs/append-path.md`` for the crash states); reads stream from a cursor.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import attrs

from eventstore import _schema
from eventstore._codec import SCHEMA_VERSION, from_payload, hash_bytes, to_payload
from eventstore._errors import ConcurrencyError, IntegrityError
from reducers import Event, InvalidEvent, JournalError, canonical_json

GENESIS = "0" * 64
SYNCHRONOUS = ("full", "normal")


def utc_now() -> str:
    """The store's clock: UTC, ISO 8601, microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def chain_hash(
    prev: str,
    session_id: str,
    version: int,
    type_name: str,
    schema_version: int,
    payload: str,
    recorded_at: str,
) -> str:
    """``sha256(prev_hash + canonical event bytes)``."""
    body = hash_bytes(
        session_id=session_id,
        version=version,
        type_name=type_name,
        schema_version=schema_version,
        payload=payload,
        recorded_at=recorded_at,
    )
    return hashlib.sha256(prev.encode() + body).hexdigest()


@attrs.frozen
class Recorded:
    """One stored row of ``events``."""

    seq: int
    session_id: str
    version: int
    type: str
    schema_version: int
    payload: str
    recorded_at: str
    prev_hash: str
    hash: str

    @property
    def event(self) -> Event:
        """The decoded event (raises :class:`InvalidEvent` for a malformed row)."""
        return from_payload(self.type, self.payload)


@attrs.frozen(kw_only=True)
class ChainProblem:
    """The first row of a session that fails the integrity walk."""

    session_id: str
    version: int
    problem: str


_INSERT = (
    "INSERT INTO events (session_id, version, type, schema_version, payload, recorded_at,"
    " prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_COLUMNS = "seq, session_id, version, type, schema_version, payload, recorded_at, prev_hash, hash"


def _connect(path: Path, *, readonly: bool, timeout: float) -> sqlite3.Connection:
    if readonly:
        if not path.is_file():
            raise JournalError(f"no journal at {path}")
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=timeout)
    if path.is_dir():
        raise JournalError(f"{path} is a folder, not a journal file")
    return sqlite3.connect(path, isolation_level=None, timeout=timeout)


class EventStore:
    """Append-only, hash-chained events of many sessions in one SQLite file."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "full",
        readonly: bool = False,
        busy_timeout: float = 30.0,
        clock: Callable[[], str] = utc_now,
    ) -> None:
        synchronous = str(synchronous).lower()
        if synchronous not in SYNCHRONOUS:
            raise InvalidEvent(f"synchronous must be 'full' or 'normal', not {synchronous!r}")
        self.path = Path(path)
        self.readonly = readonly
        self._clock = clock
        self._in_txn = False
        self._depth = 0
        try:
            self.conn = _connect(self.path, readonly=readonly, timeout=busy_timeout)
        except sqlite3.Error as exc:
            raise JournalError(f"cannot open {self.path}: {exc}") from None
        try:
            self._configure(synchronous, busy_timeout)
        except sqlite3.OperationalError as exc:  # locked past the timeout, unreadable, ...
            self.conn.close()
            kind = ConcurrencyError if "locked" in str(exc) else JournalError
            raise kind(f"cannot use {self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:  # "file is not a database"
            self.conn.close()
            if is_corruption(exc):
                raise IntegrityError(f"{self.path} is corrupt: {exc}") from None
            raise JournalError(f"{self.path} is not a tierlog journal: {exc}") from None
        except JournalError:
            self.conn.close()
            raise

    def _configure(self, synchronous: str, busy_timeout: float) -> None:
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        if self.readonly:
            _schema.check(self.conn)
            return
        _schema.install(self.conn)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self.conn.close()

    # -- writing -----------------------------------------------------------------------
    def transaction(self) -> _Transaction:
        """One ``BEGIN IMMEDIATE`` transaction: commit on success, roll back on error.

        Inside another transaction it is a savepoint (like sqlite-utils' ``atomic``):
        an error rolls back this block only, and nothing commits before the outer one.
        """
        return _Transaction(self)

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
        the head in that transaction may pass its hash as ``head_hash``.
        """
        if self._in_txn:
            return self._insert(session_id, events, expected_version, head_hash)
        if head_hash is not None:
            raise JournalError("head_hash is only trusted inside the caller's transaction")
        with self.transaction():
            return self._insert(session_id, events, expected_version, None)

    def _insert(
        self, session_id: str, events: Sequence[Event], expected_version: int, prev: str | None
    ) -> int:
        if prev is None:
            version, prev = self.head(session_id)
        else:
            version = expected_version
        if version != expected_version:
            raise ConcurrencyError(
                f"session {session_id!r} is at version {version}, expected {expected_version}"
            )
        rows = []
        now = self._clock()
        for event in events:
            version += 1
            payload = to_payload(event)
            type_name = type(event).__name__
            digest = chain_hash(prev, session_id, version, type_name, SCHEMA_VERSION, payload, now)
            rows.append(
                (session_id, version, type_name, SCHEMA_VERSION, payload, now, prev, digest)
            )
            prev = digest
        try:
            if len(rows) == 1:
                self.conn.execute(_INSERT, rows[0])
            else:
                self.conn.executemany(_INSERT, rows)
        except sqlite3.IntegrityError as exc:  # only a writer that bypassed the lock gets here
            raise ConcurrencyError(f"session {session_id!r}: {exc}") from None
        except sqlite3.OperationalError as exc:  # disk full, I/O error: nothing is committed
            raise JournalError(f"cannot write to {self.path}: {exc}") from None
        return version

    # -- reading -----------------------------------------------------------------------
    def head(self, session_id: str) -> tuple[int, str]:
        """The session's last version and hash (``0`` and the genesis hash when empty)."""
        row = self.conn.execute(
            "SELECT version, hash FROM events WHERE session_id = ? ORDER BY version DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        return (row[0], row[1]) if row else (0, GENESIS)

    def read(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[Recorded]:
        """Rows ``start..stop`` (inclusive) of a session in version order, streamed."""
        cursor = self.conn.execute(
            f"SELECT {_COLUMNS} FROM events WHERE session_id = ? AND version >= ?"
            " AND version <= ? ORDER BY version",
            (session_id, start, stop if stop is not None else 2**62),
        )
        for row in cursor:
            yield Recorded(*row)

    def read_payloads(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[tuple[str, str]]:
        """``(type, payload)`` of rows ``start..stop``: the replay hot path."""
        return iter(
            self.conn.execute(
                "SELECT type, payload FROM events WHERE session_id = ? AND version >= ?"
                " AND version <= ? ORDER BY version",
                (session_id, start, stop if stop is not None else 2**62),
            )
        )

    def sessions(self) -> list[str]:
        """Every session id, sorted."""
        rows = self.conn.execute("SELECT DISTINCT session_id FROM events ORDER BY session_id")
        return [r[0] for r in rows]

    def turns(self, session_id: str, first: int, last: int) -> Iterator[dict[str, Any]]:
        """The payloads of the turns stored at versions ``first..last``, in order."""
        cursor = self.conn.execute(
            "SELECT payload FROM events WHERE session_id = ? AND version BETWEEN ? AND ?"
            " AND type = 'TurnAppended' ORDER BY version",
            (session_id, first, last),
        )
        for (payload,) in cursor:
            yield json.loads(payload)

    # -- heads (the witness) and verbatim copies (import) -------------------------------
    def heads(self) -> list[tuple[str, int, str]]:
        """Every session's ``(id, head version, head hash)``, sorted by id."""
        rows = self.conn.execute(
            "SELECT session_id, max(version), hash FROM events GROUP BY session_id"
            " ORDER BY session_id"
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def hash_at(self, session_id: str, version: int) -> str | None:
        """The hash of the session's event at ``version``, or ``None`` if there is none."""
        row = self.conn.execute(
            "SELECT hash FROM events WHERE session_id = ? AND version = ?", (session_id, version)
        ).fetchone()
        return row[0] if row else None

    def integrity_problems(self) -> list[str]:
        """What ``PRAGMA integrity_check`` complains about (nothing when the file is sound)."""
        return [row[0] for row in self.conn.execute("PRAGMA integrity_check") if row[0] != "ok"]

    @contextlib.contextmanager
    def attached(self, path: Path) -> Iterator[str]:
        """Attach the journal at ``path`` for the block (outside any transaction);
        yields its schema name for :meth:`copy_session`."""
        self.conn.execute("ATTACH DATABASE ? AS tierlog_source", (str(path),))
        try:
            yield "tierlog_source"
        finally:
            self.conn.execute("DETACH DATABASE tierlog_source")

    def copy_session(self, schema: str, session_id: str) -> None:
        """Copy a session's rows verbatim (hashes and all) from an attached journal, in the
        caller's transaction. ``import`` decides new sessions in a scratch journal and
        copies them here; the caller has checked, under this transaction's lock, that
        the session does not exist yet."""
        if not self._in_txn:
            raise JournalError("copy_session joins the caller's transaction; open one")
        columns = _COLUMNS.removeprefix("seq, ")
        # the source is a tierlog journal: its payloads passed the same CHECK(json_valid)
        self.conn.execute("PRAGMA ignore_check_constraints = ON")
        try:
            self.conn.execute(
                f"INSERT INTO main.events ({columns}) SELECT {columns} FROM {schema}.events"
                " WHERE session_id = ? ORDER BY version",
                (session_id,),
            )
        except sqlite3.IntegrityError as exc:
            raise ConcurrencyError(f"cannot copy session {session_id!r}: {exc}") from None
        except sqlite3.OperationalError as exc:
            raise JournalError(f"cannot write to {self.path}: {exc}") from None
        finally:
            self.conn.execute("PRAGMA ignore_check_constraints = OFF")

    def select(
        self,
        sql: str,
        *,
        read_only: bool = False,
        timeout: float | None = None,
        heap_limit: int | None = None,
    ) -> Selection:
        """The rows of ``sql``, streamed, within limits; use it as a context manager.

        ``read_only``: an authorizer denies every write, ``PRAGMA`` and ``ATTACH``.
        ``timeout`` (seconds) and ``heap_limit`` (bytes) stop a runaway query with a
        :class:`JournalError`; Ctrl-C stops it with ``KeyboardInterrupt``. The heap
        limit caps every string or blob of this connection while the selection is
        open, and SQLite's whole heap through ``PRAGMA hard_heap_limit``, which is
        process-wide and can only be lowered: it stays for the process (the CLI runs
        one query a process).
        """
        return Selection(
            self.conn, sql, read_only=read_only, timeout=timeout, heap_limit=heap_limit
        )

    # -- snapshots (a cache: replay must agree with it) ---------------------------------
    def save_snapshot(
        self,
        session_id: str,
        version: int,
        sha256: str,
        header: bytes,
        chunks: Iterable[tuple[str, int, bytes]],
    ) -> None:
        """Replace the session's snapshot header and the ledger chunks that changed."""
        self.conn.execute(
            "INSERT OR REPLACE INTO snapshots (session_id, version, sha256, state)"
            " VALUES (?, ?, ?, ?)",
            (session_id, version, sha256, header),
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO snapshot_chunks (session_id, ledger, chunk, data)"
            " VALUES (?, ?, ?, ?)",
            ((session_id, name, k, data) for name, k, data in chunks),
        )

    def load_snapshot(
        self, session_id: str
    ) -> tuple[int, str, bytes, Iterator[tuple[str, bytes]]] | None:
        """``(version, sha256, header, (ledger, chunk data) rows in order)``, if any."""
        row = self.conn.execute(
            "SELECT version, sha256, state FROM snapshots WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        chunks = self.conn.execute(
            "SELECT ledger, data FROM snapshot_chunks WHERE session_id = ? ORDER BY ledger, chunk",
            (session_id,),
        )
        return row[0], row[1], row[2], iter(chunks)

    # -- integrity ---------------------------------------------------------------------
    def check_chain(self, session_id: str) -> ChainProblem | None:
        """The first version whose sequence, payload or hash is wrong, or ``None``."""
        walk = self.walk(session_id)
        for _ in walk:
            pass
        return walk.problem

    def walk(self, session_id: str) -> ChainWalk:
        """The session's events, decoded once, checked link by link as they stream."""
        return ChainWalk(self, session_id)


class _Transaction:
    """The context manager behind :meth:`EventStore.transaction`."""

    __slots__ = ("_savepoint", "_store")

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self._savepoint = ""

    def __enter__(self) -> None:
        store = self._store
        if store._in_txn:
            store._depth += 1
            self._savepoint = f"tierlog_{store._depth}"
            store.conn.execute(f"SAVEPOINT {self._savepoint}")
            return
        try:
            store.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise ConcurrencyError(f"journal is busy: {exc}") from None
        store._in_txn = True

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        store = self._store
        if self._savepoint:
            if exc_type is not None:
                store.conn.execute(f"ROLLBACK TO {self._savepoint}")
            store.conn.execute(f"RELEASE {self._savepoint}")
            store._depth -= 1
            return
        try:
            if exc_type is None:
                _commit(store.conn)
            else:
                store.conn.execute("ROLLBACK")
        finally:
            store._in_txn = False


def _commit(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise JournalError(f"commit failed, nothing was written: {exc}") from None


class ChainWalk:
    """Iterate a session's events while walking its hash chain; stops at the first bad row.

    After iteration, ``problem`` is the first broken link, or ``None``.
    """

    def __init__(self, store: EventStore, session_id: str) -> None:
        self._rows = store.read(session_id)
        self.session_id = session_id
        self.problem: ChainProblem | None = None

    def __iter__(self) -> Iterator[Event]:
        prev, expected = GENESIS, 1
        for row in self._rows:
            event, problem = _check_row(row, prev, expected)
            if event is None:
                version = min(row.version, expected)  # a missing row is named, not its successor
                self.problem = ChainProblem(
                    session_id=self.session_id, version=version, problem=problem
                )
                return
            yield event
            prev, expected = row.hash, expected + 1


def _check_row(row: Recorded, prev: str, expected: int) -> tuple[Event | None, str]:
    """The row's event if it links correctly after ``prev``, else ``None`` and why."""
    if row.version != expected:
        return None, f"version sequence broken: expected {expected}, found {row.version}"
    if row.prev_hash != prev:
        return None, "prev_hash does not match the previous event's hash"
    try:
        data = json.loads(row.payload)
    except json.JSONDecodeError:
        return None, "payload is not JSON"
    if canonical_json(data).decode() != row.payload:
        return None, "payload is not in canonical form (edited by hand?)"
    digest = chain_hash(
        prev,
        row.session_id,
        row.version,
        row.type,
        row.schema_version,
        row.payload,
        row.recorded_at,
    )
    if digest != row.hash:
        return None, "hash does not match the event's content"
    try:
        return from_payload(row.type, data), ""
    except InvalidEvent as exc:
        return None, f"payload does not decode: {exc}"


def is_corruption(exc: sqlite3.Error) -> bool:
    """Whether SQLite found the file damaged (a malformed page, a torn header)."""
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_CORRUPT"


_READS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
    sqlite3.SQLITE_SAVEPOINT,
    sqlite3.SQLITE_TRANSACTION,
}


def _reads_only(action: int, *_: object) -> int:
    """Authorizer: reads only (ATTACH, PRAGMA and every write are denied)."""
    return sqlite3.SQLITE_OK if action in _READS else sqlite3.SQLITE_DENY


class Selection:
    """One query's column names and rows, with its limits in force until closed."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        sql: str,
        *,
        read_only: bool,
        timeout: float | None,
        heap_limit: int | None,
    ) -> None:
        if not sql.strip():
            raise InvalidEvent("empty query")
        self._conn, self._sql, self._read_only = conn, sql, read_only
        self._timeout, self._heap_limit = timeout, heap_limit
        self._deadline = float("inf")
        self._restore: list[Callable[[], object]] = []
        self.names: list[str] = []
        self._cursor: sqlite3.Cursor | None = None

    def __enter__(self) -> Selection:
        conn = self._conn
        if self._heap_limit is not None:
            conn.execute(f"PRAGMA hard_heap_limit = {int(self._heap_limit)}")
            before = conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(before, int(self._heap_limit)))
            self._restore.append(lambda: conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, before))
        if self._read_only:
            conn.execute("PRAGMA query_only = ON")
            conn.set_authorizer(_reads_only)
            self._restore += [lambda: conn.execute("PRAGMA query_only = OFF")]
            self._restore += [lambda: conn.set_authorizer(None)]
        if self._timeout is not None:
            self._deadline = time.monotonic() + self._timeout
        # also gives Python a moment to see Ctrl-C while SQLite runs
        conn.set_progress_handler(self._stop, 10_000)
        self._restore.append(lambda: conn.set_progress_handler(None, 0))
        try:
            self._cursor = self._guarded(lambda: conn.execute(self._sql))
        except BaseException:
            self.close()
            raise
        self.names = [c[0] for c in self._cursor.description or ()]
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the query and lift its limits (idempotent)."""
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = None
        while self._restore:
            self._restore.pop()()

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        cursor = self._cursor
        if cursor is None:
            raise JournalError("the selection is closed")
        while True:
            row = self._guarded(lambda: next(cursor, None))
            if row is None:
                return
            yield row

    def _stop(self) -> bool:
        return time.monotonic() > self._deadline

    def _guarded(self, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except (MemoryError, sqlite3.Error) as exc:
            raise self._stopped(exc) from None

    def _stopped(self, exc: MemoryError | sqlite3.Error) -> BaseException:
        """The tierlog error (or the Ctrl-C) that a failed step means."""
        name = getattr(exc, "sqlite_errorname", "")
        memory = "memory"
        if self._heap_limit:
            memory = f"its memory limit of {self._heap_limit / 2**20:g} MB"
        if isinstance(exc, MemoryError) or (name == "SQLITE_TOOBIG" and self._heap_limit):
            return JournalError(f"query stopped: it needs more than {memory}")
        if name == "SQLITE_INTERRUPT":
            if time.monotonic() <= self._deadline:
                return KeyboardInterrupt()  # Ctrl-C, seen inside the progress handler
            return JournalError(f"query stopped: it ran past its time limit of {self._timeout:g} s")
        if is_corruption(exc):
            return IntegrityError(f"database is corrupt: {exc}")
        denied = "not authorized" in str(exc) or "readonly" in str(exc)
        hint = " (read-only: SELECT and WITH queries only)" if denied else ""
        return InvalidEvent(f"query failed: {exc}{hint}")
