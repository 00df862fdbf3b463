"""The SQLite recorder: tierlog's embedded backend, and every SQL string it runs.

It knows nothing of tiers. Every write is one ``BEGIN IMMEDIATE`` transaction
(see ``docs/append-path.md`` for the crash states); reads stream from a cursor. The
append path and its transactions are ``AppendPath``'s; this module gives it the
statements, the head as stored and the INSERT.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from eventstore._errors import ConcurrencyError, IntegrityError, UnreadableRow, is_corruption
from eventstore._sqlite import _schema
from eventstore._sqlite._connection import Closed, Statements, connect
from eventstore._sqlite._guard import QueryGuard
from eventstore._store import (
    CHAIN_COLUMNS,
    GENESIS,
    LINK_COLUMNS,
    AppendPath,
    AuditQueries,
    ChainRow,
    EventLog,
    Head,
    LinkRow,
    QueryResult,
    Recorded,
    Row,
    StoredSnapshot,
    audit_queries,
    read_range,
    seconds,
    utc_now,
)
from reducers import InvalidArgument, JournalError

SYNCHRONOUS = ("full", "normal")


_INSERT = (
    "INSERT INTO events (session_id, version, type, schema_version, payload, recorded_at,"
    " prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_COLUMNS = "seq, session_id, version, type, schema_version, payload, recorded_at, prev_hash, hash"

_SESSIONS_SQL = """
SELECT session_id,
       count(*) AS events,
       sum(type = 'TurnAppended') AS turns,
       sum(type IN ('CompactionRefused', 'MarkerRefused')) AS refusals,
       sum(type = 'MarkerInvalidated') AS invalidations,
       sum(type = 'Resumed' AND payload ->> '$.source' = 'raw_checkpoint') AS raw_fallbacks
FROM events GROUP BY session_id ORDER BY session_id
"""

_AUDIT_SQL = audit_queries(_schema.VIEWS, "?")


PAGE = 1024  # versions a read fetches with one statement
MAX_VERSION = 2**63 - 1


def _undecodable(exc: sqlite3.OperationalError) -> bool:
    """A row's text that is not UTF-8 (written behind tierlog's back) fails its fetch."""
    return str(exc).startswith("Could not decode to UTF-8")


class SqliteRecorder(AuditQueries, AppendPath):
    """Append-only, hash-chained events of many sessions in one SQLite file."""

    SUMMARIES_SQL = _SESSIONS_SQL
    AUDIT_SQL = _AUDIT_SQL

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
            raise InvalidArgument(f"synchronous must be 'full' or 'normal', not {synchronous!r}")
        if not isinstance(path, (str, os.PathLike)):
            raise JournalError(f"a journal path must be a str or a path, not {type(path).__name__}")
        self.path = Path(path)
        self.readonly = readonly
        super().__init__(Statements(self), clock)
        self._attached: SqliteRecorder | None = None
        # Heads this connection read or wrote, valid while PRAGMA data_version (which
        # changes when another connection commits) stays at _data_version.
        self._heads: dict[str, Head] = {}
        self._forget_heads = self._heads.clear  # what a rolled-back append runs
        self._data_version = -1
        try:
            self.conn = connect(self.path, readonly=readonly, timeout=busy_timeout)
        except (sqlite3.Error, ValueError, OSError) as exc:  # ValueError: NUL, surrogates
            raise JournalError(f"cannot open {self.path}: {exc}") from None
        try:
            self._configure_waiting(synchronous, busy_timeout)
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

    def _configure_waiting(self, synchronous: str, busy_timeout: float) -> None:
        """``_configure``, tried again while another connection that is creating the
        file or switching it to WAL holds it locked (SQLite answers some of those steps
        "database is locked" at once, without its busy handler), up to ``busy_timeout``."""
        deadline = time.monotonic() + busy_timeout
        while True:
            try:
                self._configure(synchronous, busy_timeout)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                time.sleep(0.005)

    def _configure(self, synchronous: str, busy_timeout: float) -> None:
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        if self.readonly:
            _schema.check(self.conn)
            return
        _schema.install(self.conn)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        # Every row this connection inserts was written by the canonical encoder, or
        # checked link by link and re-encoded (append_recorded, copy_session), in the
        # same transaction: CHECK(json_valid(payload)) would parse each payload again.
        # The CHECKs still hold for every other connection (a hand-written row).
        self.conn.execute("PRAGMA ignore_check_constraints = ON")

    def close(self) -> None:
        """Close the connection (idempotent); any later use is a JournalError."""
        if isinstance(self.conn, sqlite3.Connection):
            self.conn.close()
        self.conn = cast(sqlite3.Connection, Closed(self.path))

    # -- writing (the transactions are AppendPath's: BEGIN IMMEDIATE, savepoints) ------
    def insert(self, rows: Sequence[Row]) -> None:
        """Insert rows of one session given in ``_INSERT`` order in the open transaction,
        and remember the session's new head."""
        if self._tx.depth and not self.conn.in_transaction:
            raise JournalError(f"cannot write to {self.path}: the transaction was rolled back")
        last = rows[-1]
        try:
            if len(rows) == 1:
                self.conn.execute(_INSERT, last)
            else:
                self.conn.executemany(_INSERT, rows)
        except sqlite3.IntegrityError as exc:  # only a writer that bypassed the lock gets here
            raise ConcurrencyError(f"session {last[0]!r}: {exc}") from None
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:  # as _writing()
            raise JournalError(f"cannot write to {self.path}: {exc}") from None
        self._heads[last[0]] = Head(last[1], last[7])
        undo = self._tx.undo
        if undo:  # a rolled-back append leaves no cached head (on_rollback, inline)
            undo[-1].append(self._forget_heads)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Map a failed write (disk or database full, I/O error) to :class:`JournalError`.

        Inside a transaction SQLite may have rolled the whole transaction back by
        itself after such an error; a statement must then not run in autocommit.
        """
        if self._tx.depth and not self.conn.in_transaction:
            raise JournalError(f"cannot write to {self.path}: the transaction was rolled back")
        try:
            yield
        except sqlite3.IntegrityError:
            raise
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
            raise JournalError(f"cannot write to {self.path}: {exc}") from None

    # -- reading -----------------------------------------------------------------------
    @property
    def location(self) -> str:
        """The journal file's path."""
        return str(self.path)

    def read_head(self, session_id: str) -> Head:
        """The session's last version and hash (``0`` and the genesis hash when empty);
        in a write transaction, under its lock (``BEGIN IMMEDIATE`` holds the file's).

        Remembered per session until another connection commits (``PRAGMA
        data_version``, one cheap statement, tells): a live session's commit reads
        no index.
        """
        (data_version,) = self.conn.execute("PRAGMA data_version").fetchone()
        if data_version != self._data_version:
            self._heads.clear()
            self._data_version = data_version
        head = self._heads.get(session_id)
        if head is None:
            row = self.conn.execute(
                "SELECT version, hash FROM events WHERE session_id = ?"
                " ORDER BY version DESC LIMIT 1",
                (session_id,),
            ).fetchone()
            if row is not None and (type(row[0]) is not int or row[0] < 1):
                raise IntegrityError(
                    f"session {session_id!r}: its last stored version is {row[0]!r},"
                    " not a version from 1 on (edited by hand?)"
                )
            head = self._heads[session_id] = Head(row[0], row[1]) if row else Head(0, GENESIS)
        return head

    def read(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[Recorded]:
        """Rows ``start..stop`` (inclusive) of a session in version order, streamed
        (without ``stop``, up to the last version stored when the read begins)."""
        return map(Recorded._make, self._rows(_COLUMNS, session_id, *read_range(start, stop)))

    def read_chain(self, session_id: str) -> Iterator[ChainRow]:
        """``CHAIN_COLUMNS`` of every row of a session, as plain tuples: what ``verify``'s
        ``ChainWalk`` reads (``read``'s columns but ``seq`` and the session)."""
        rows: Iterator[ChainRow] = self._rows(CHAIN_COLUMNS, session_id, 1, None)
        return rows

    def read_links(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[LinkRow]:
        """``LinkRow`` of rows ``start..stop``: what a reader's link check reads (only
        the columns the hash covers that the walk does not know)."""
        return self._rows(LINK_COLUMNS, session_id, *read_range(start, stop))

    def read_payloads(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[tuple[str, str]]:
        """``(type, payload)`` of rows ``start..stop``: the replay hot path."""
        return self._rows("type, payload", session_id, *read_range(start, stop))

    def _rows(self, columns: str, session_id: str, start: int, stop: int | None) -> Iterator[Any]:
        """``columns`` of a session's rows ``start..stop`` in version order (without
        ``stop``, up to the last version stored when the read begins), ``PAGE``
        versions at a time.

        Each page is read whole by a statement of its own, so no read is left open on
        the connection while the caller works with the rows: an open read would pin
        this connection's snapshot, and its next write after another connection's
        commit would fail ("database is locked"). Every row up to the bound was
        committed before the read began, so a page passed over gains none later. A page
        without rows (a gap only a tampered file has) is followed by a jump to the next
        stored version; a version stored as no integer (a tampered file too) is read
        last, where it sorts.

        A row that cannot be fetched (text that is not UTF-8, written behind tierlog's
        back) fails its whole page; the page is then read again a version at a time, so
        every row before the bad one reaches the reader first, and the bad one raises
        :class:`UnreadableRow` naming its version: ``verify`` names the first bad row.
        """
        where = "FROM events WHERE session_id = ? AND version > ? AND version <= ?"
        rows_sql = f"SELECT {columns} {where} ORDER BY version"
        next_sql = f"SELECT min(version) {where}"

        def pages() -> Iterator[list[Any]]:
            end = stop if stop is not None else self._last_version(session_id)
            after, size = start - 1, PAGE
            while after < end:
                last = min(after + size, end)
                try:
                    rows = self.conn.execute(rows_sql, (session_id, after, last)).fetchall()
                except sqlite3.OperationalError as exc:
                    if not _undecodable(exc):
                        raise
                    if size == 1:
                        raise UnreadableRow(session_id, last) from None
                    size = 1  # the rows before the bad one, one version at a time
                    continue
                if rows:
                    yield rows
                    after = last
                    continue
                (found,) = self.conn.execute(next_sql, (session_id, after, end)).fetchone()
                if found is None:
                    break
                after = found - 1
            if stop is None and end == MAX_VERSION:  # what sorts above every integer
                tail = self.conn.execute(
                    f"SELECT {columns} FROM events WHERE session_id = ? AND version > ?"
                    " ORDER BY version",
                    (session_id, MAX_VERSION),
                )
                yield tail.fetchall()

        return itertools.chain.from_iterable(pages())

    def _last_version(self, session_id: str) -> int:
        """The session's highest stored version (0 if none); ``MAX_VERSION`` when that
        is no integer (a tampered file), so a read passes every integer version."""
        (last,) = self.conn.execute(
            "SELECT max(version) FROM events WHERE session_id = ?", (session_id,)
        ).fetchone()
        if last is None:
            return 0
        return last if type(last) is int else MAX_VERSION

    def turn_payloads(self, session_id: str, first: int, last: int) -> Iterator[str]:
        """The payloads of the turns stored at versions ``first..last``, in order."""
        cursor = self.conn.execute(
            "SELECT payload FROM events WHERE session_id = ? AND version BETWEEN ? AND ?"
            " AND type = 'TurnAppended' ORDER BY version",
            (session_id, first, last),
        )
        return (payload for (payload,) in cursor)

    def sessions(self) -> list[str]:
        """Every session id, sorted."""
        rows = self.conn.execute("SELECT DISTINCT session_id FROM events ORDER BY session_id")
        return [r[0] for r in rows]

    def _dicts(self, sql: str, params: tuple[object, ...] = ()) -> Iterator[dict[str, Any]]:
        cursor = self.conn.execute(sql, params)
        names = [c[0] for c in cursor.description]
        return (dict(zip(names, row, strict=True)) for row in cursor)

    def hash_at(self, session_id: str, version: int) -> str | None:
        """The hash of the session's event at ``version``, or ``None`` if there is none."""
        row = self.conn.execute(
            "SELECT hash FROM events WHERE session_id = ? AND version = ?", (session_id, version)
        ).fetchone()
        return row[0] if row else None

    def spill_handles(self) -> Iterator[str]:
        """Every spill handle any session of the journal recorded (distinct)."""
        cursor = self.conn.execute(
            "SELECT DISTINCT payload ->> '$.handle' FROM events WHERE type = 'Spilled'"
        )
        return (handle for (handle,) in cursor if isinstance(handle, str))

    # -- snapshots (a cache, checked before use: see _snapshots) -------------------------
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
        (``replace``: every chunk, the old ones dropped first), in the open transaction
        or in one of its own."""
        if not self._tx.depth:
            with self.transaction():
                self.save_snapshot(session_id, version, sha256, header, chunks, replace=replace)
            return
        with self._writing():
            if replace:
                self.conn.execute("DELETE FROM snapshot_chunks WHERE session_id = ?", (session_id,))
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

    def load_snapshot(self, session_id: str) -> StoredSnapshot | None:
        """The session's snapshot: header and ``(ledger, chunk data)`` rows in order."""
        row = self.conn.execute(
            "SELECT version, sha256, state FROM snapshots WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        chunks = self.conn.execute(
            "SELECT ledger, data FROM snapshot_chunks WHERE session_id = ? ORDER BY ledger, chunk",
            (session_id,),
        )
        return StoredSnapshot(
            version=row[0], sha256=row[1], header=bytes(row[2]), chunks=iter(chunks)
        )

    # -- audits ------------------------------------------------------------------------
    def query(
        self, sql: str, *, timeout: float | None, heap_limit: int | None = None
    ) -> QueryResult:
        """One read-only query (no statement can write, ATTACH included), its rows streamed.

        It stops with InvalidEvent after ``timeout`` seconds, or when it needs more than
        ``heap_limit`` bytes: no string or blob of this connection may exceed it while the
        query runs, and neither may SQLite's heap (``PRAGMA hard_heap_limit``, which is
        process-wide and can only be lowered, so it stays: the CLI runs one query a
        process). Ctrl-C stops it with ``KeyboardInterrupt``. The limits hold until the
        rows are exhausted or the result is closed.
        """
        if not sql.strip():
            raise InvalidArgument("empty query")
        timeout = None if timeout is None else seconds(timeout)
        guard = QueryGuard(self.conn, self.readonly, timeout=timeout, heap_limit=heap_limit)
        guard.install()
        try:
            cursor = self.conn.execute(sql)
        except (MemoryError, sqlite3.Error) as exc:
            guard.lift()
            raise guard.error(exc) from None
        except BaseException:
            guard.lift()
            raise
        names = tuple(c[0] for c in cursor.description or ())
        guard.undo_last(cursor.close)
        rows = guard.rows(cursor)

        def done() -> None:
            rows.close()
            guard.lift()

        return QueryResult(columns=names, rows=rows, done=done)

    # -- witnesses and verbatim copies (import) ---------------------------------------
    def heads(self) -> dict[str, Head]:
        """Every session's head, by session id in order."""
        rows = self.conn.execute(
            "SELECT session_id, max(version), hash FROM events GROUP BY session_id"
            " ORDER BY session_id"
        )
        return {r[0]: Head(r[1], r[2]) for r in rows}

    @contextlib.contextmanager
    def attached(self, source: EventLog) -> Iterator[None]:
        """Attach ``source``'s file for the block (outside any transaction), so that
        :meth:`copy_session` copies from it inside SQLite."""
        if not isinstance(source, SqliteRecorder):
            yield
            return
        self.conn.execute("ATTACH DATABASE ? AS tierlog_source", (str(source.path),))
        self._attached = source
        try:
            yield
        finally:
            self._attached = None
            self.conn.execute("DETACH DATABASE tierlog_source")

    def copy_session(self, source: EventLog, session_id: str) -> None:
        """Insert ``session_id``'s rows from ``source`` verbatim (hashes and all), in the
        caller's transaction. ``import`` decides a new session in a scratch journal and
        copies it here; the caller has checked under this transaction's lock that the
        session does not exist yet. From an attached source this is one INSERT ... SELECT
        (the scratch's rows were written by tierlog's canonical encoder; like this one,
        its writing connection skips CHECK(json_valid)); otherwise rows are read and
        inserted as ``AppendPath`` does.
        """
        if self._attached is not source or not self._tx.depth:
            super().copy_session(source, session_id)
            return
        columns = _COLUMNS.removeprefix("seq, ")
        self._heads.pop(session_id, None)  # read again: these rows bypass insert()
        self._tx.held.pop(session_id, None)
        try:
            self.conn.execute(
                f"INSERT INTO main.events ({columns}) SELECT {columns}"
                " FROM tierlog_source.events WHERE session_id = ? ORDER BY version",
                (session_id,),
            )
        except sqlite3.IntegrityError as exc:
            raise ConcurrencyError(f"cannot copy session {session_id!r}: {exc}") from None
        except sqlite3.OperationalError as exc:
            raise JournalError(f"cannot write to {self.path}: {exc}") from None

    def integrity_problems(self) -> list[str]:
        """What ``PRAGMA integrity_check`` reports (empty when the file is sound), the
        CHECK constraints included (a writing connection skips them only to insert),
        and what of the schema around ``events`` is not tierlog's (``schema_problems``).

        On a read-only connection SQLite's check skips the CHECK constraints; the one a
        read cannot see past, ``version >= 1`` (reads start at version 1), is checked
        by hand. A payload that is no JSON is the chain walk's finding."""
        return self._integrity_check() + _schema.schema_problems(self.conn)

    def view_notes(self) -> list[str]:
        return _schema.view_notes(self.conn)

    def _integrity_check(self) -> list[str]:
        if self.readonly:
            found = [
                row[0] for row in self.conn.execute("PRAGMA integrity_check") if row[0] != "ok"
            ]
            (below,) = self.conn.execute("SELECT count(*) FROM events WHERE version < 1").fetchone()
            if below:
                found.append(
                    f"CHECK constraint failed in events: {below} row(s) at a version below 1"
                )
            return found
        self.conn.execute("PRAGMA ignore_check_constraints = OFF")
        try:
            return [row[0] for row in self.conn.execute("PRAGMA integrity_check") if row[0] != "ok"]
        finally:
            self.conn.execute("PRAGMA ignore_check_constraints = ON")
