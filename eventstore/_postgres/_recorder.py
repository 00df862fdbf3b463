"""The PostgreSQL recorder: the same journal on a server, and every SQL string it runs.

psycopg 3 is an optional extra (``pip install 'tierlog[postgres]'``), imported only
when a ``postgresql://`` journal is opened. The connection runs in autocommit mode;
``transaction()`` opens an explicit one (a savepoint when nested). Inside a write
transaction, the first ``head`` of a session takes a transaction-level advisory
lock on that session alone, so writers on different sessions commit in parallel
and writers on one session queue behind each other: nobody sees "database is
locked", and a stale expected version is a :class:`ConcurrencyError`.

The connection and its round trips are ``_wire.Wire``'s: a checked commit is two
(``BEGIN``, lock, head; then ``INSERT``, ``COMMIT``). The append path and when each
transaction statement runs are ``AppendPath``'s, as for every backend.

Reads page through the rows by version (no cursor stays open between pages), so a
caller may query again while it iterates, as ``verify`` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import unquote

from eventstore._errors import IntegrityError
from eventstore._location import _QUERY_SECRET, _USERINFO_SECRET, redact
from eventstore._postgres import _schema as _pg_schema
from eventstore._postgres._query import HINT, stream
from eventstore._postgres._spills import SpillRow
from eventstore._postgres._views import view_problems
from eventstore._postgres._wire import Wire, first_line
from eventstore._store import (
    GENESIS,
    AppendPath,
    AuditQueries,
    Head,
    QueryResult,
    Recorded,
    Row,
    StoredSnapshot,
    audit_queries,
    link_rows,
    read_range,
    seconds,
    utc_now,
)
from reducers import Event, InvalidArgument, JournalError

PAGE = 2_000  # rows a read fetches at a time
COPY_MIN = 64  # batches at least this long are written with COPY
LINKED = 256  # events linked at a time while a COPY streams them
LOCK_TIMEOUT = 30.0  # seconds a writer waits for a session's lock (SQLite's busy timeout)

_COLUMNS = "session_id, version, type, schema_version, payload, recorded_at, prev_hash, hash"
_INSERT = f"INSERT INTO events ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
# binary: the server parses no text (about 1.25x the events/s of text, bench/pg.py)
_COPY = f"COPY events ({_COLUMNS}) FROM STDIN (FORMAT BINARY)"
_COPY_TYPES = ("text", "int8", "text", "int4", "text", "text", "text", "text")
_SELECT = f"seq, {_COLUMNS}"
_HEAD = "SELECT version, hash FROM events WHERE session_id = %s ORDER BY version DESC LIMIT 1"
_LOCK = "SELECT pg_advisory_xact_lock(%s, hashtext(%s))"

_SESSIONS_SQL = """
WITH RECURSIVE ids AS (
    SELECT min(session_id) AS id FROM events
    UNION ALL
    SELECT (SELECT min(session_id) FROM events WHERE session_id > ids.id) FROM ids
    WHERE ids.id IS NOT NULL
)
SELECT id FROM ids WHERE id IS NOT NULL
"""

_SUMMARIES_SQL = f"""
SELECT session_id,
       count(*) AS events,
       count(*) FILTER (WHERE type = 'TurnAppended') AS turns,
       count(*) FILTER (WHERE type IN ('CompactionRefused', 'MarkerRefused')) AS refusals,
       count(*) FILTER (WHERE type = 'MarkerInvalidated') AS invalidations,
       count(*) FILTER (WHERE type = 'Resumed'
                        AND {_pg_schema.PAYLOAD} ->> 'source' = 'raw_checkpoint')
                        AS raw_fallbacks
FROM events GROUP BY session_id ORDER BY session_id
"""

_AUDIT_SQL = audit_queries(_pg_schema.VIEWS, "%s")

_READ_ONLY_START = re.compile(r"\s*(\(\s*)*(select|with|values|table|explain)\b", re.I)


def _secrets(url: str) -> set[str]:
    """The URL's secrets, as written and percent-decoded."""
    found = [m.group(2) for m in _USERINFO_SECRET.finditer(url)]
    found += [m.group(2) for m in _QUERY_SECRET.finditer(url)]
    return {text for secret in found if secret for text in (secret, unquote(secret))}


def scrub(message: str, url: str) -> str:
    """``message`` (a driver's, which may quote the URL) with ``url``'s secrets hidden."""
    message = message.replace(url, redact(url))
    for secret in sorted(_secrets(url), key=len, reverse=True):
        message = message.replace(secret, "***")
    return message


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise JournalError(
            "a PostgreSQL journal needs psycopg 3: pip install 'tierlog[postgres]'"
        ) from None
    return psycopg


class PostgresRecorder(AuditQueries, AppendPath):
    """Append-only, hash-chained events of many sessions in one PostgreSQL schema."""

    SUMMARIES_SQL = _SUMMARIES_SQL
    AUDIT_SQL = _AUDIT_SQL

    def __init__(
        self,
        url: str,
        *,
        readonly: bool = False,
        clock: Callable[[], str] = utc_now,
        synchronous: str = "full",
        connect_timeout: int = 30,
        lock_timeout: float | None = None,
    ) -> None:
        """``lock_timeout``: seconds a writer waits for a session's lock before a
        ConcurrencyError; ``None``: the server's setting (the URL's ``options=-c
        lock_timeout=...``, the role's, the database's), or :data:`LOCK_TIMEOUT`
        where that is 0 (wait forever)."""
        wait = None if lock_timeout is None else seconds(lock_timeout, "lock_timeout")
        self._pg = _driver()
        self.url = url
        self.readonly = readonly
        self._setup = (wait, str(synchronous).lower() == "normal", connect_timeout)
        self.wire = Wire(self._pg, self._connect(install=True), self.location, self._connect)
        super().__init__(self.wire, clock)

    @property
    def conn(self) -> Any:
        """The connection (a new one after the last one broke)."""
        return self.wire.conn

    def _connect(self, *, install: bool = False) -> Any:
        """A connection set up for this journal: its lock timeout, read-only or not,
        ``synchronous_commit``; the schema checked (installed by a writer) the first time."""
        psycopg, url = self._pg, self.url
        wait, normal, connect_timeout = self._setup
        try:
            conn = psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout)
        except (psycopg.Error, ValueError, TypeError) as exc:
            problem = scrub(first_line(exc), url)
            raise JournalError(f"cannot connect to {redact(url)}: {problem}") from None
        try:
            _set_lock_timeout(conn, wait)
            if self.readonly:
                conn.execute("SET default_transaction_read_only = on")
            if install:
                _pg_schema.check(conn) if self.readonly else _pg_schema.install(conn)
            if normal:  # lose the last commits on a server crash
                conn.execute("SET synchronous_commit = off")
        except psycopg.Error as exc:
            conn.close()
            problem = scrub(first_line(exc), url)
            raise JournalError(f"cannot use {self.location}: {problem}") from None
        except JournalError:
            conn.close()
            raise
        return conn

    @property
    def location(self) -> str:
        """The URL, without its password."""
        return redact(self.url)

    def close(self) -> None:
        """Close the connection (idempotent); a closed journal does not reconnect."""
        self.wire.close()

    # -- writing (the transactions are AppendPath's; the statements, the Wire's) -------
    def read_head(self, session_id: str) -> Head:
        """The session's last version and hash; inside a write transaction, first lock
        the session against other writers until that transaction ends (``AppendPath``
        then holds the head: this runs once per session and transaction)."""
        lock = [(_LOCK, (_pg_schema.LOCK_SPACE, session_id))] if self._tx.depth else []
        row = self.wire.send(*lock, (_HEAD, (session_id,))).fetchone()
        return Head(row[0], row[1]) if row else Head(0, GENESIS)

    def heads(self) -> dict[str, Head]:
        """Every session's head, by session id in order."""
        rows = self._run(
            "SELECT DISTINCT ON (session_id) session_id, version, hash FROM events"
            " ORDER BY session_id, version DESC"
        ).fetchall()
        return {r[0]: Head(r[1], r[2]) for r in rows}

    def insert(self, rows: Sequence[Row]) -> None:
        """Rows of one session, sent with the next statement (a long batch: COPY now)."""
        if len(rows) < COPY_MIN:
            self.wire.defer(*[(_INSERT, row) for row in rows])
        else:
            self.wire.copy(_COPY, rows, _COPY_TYPES)

    stream_min = COPY_MIN

    def insert_events(
        self, session_id: str, head: Head, events: Sequence[Event], recorded_at: str
    ) -> Head:
        """A long batch linked ``LINKED`` events at a time as it streams into one COPY: the
        server stores the first rows while the next are encoded and hashed."""
        last = [head]

        def rows() -> Iterator[Row]:
            version, prev = head
            for start in range(0, len(events), LINKED):
                linked = link_rows(session_id, version, prev, events[start : start + LINKED],
                                   recorded_at)  # fmt: skip
                yield from linked
                version, prev = linked[-1][1], linked[-1][7]
            last[0] = Head(version, prev)

        self.wire.copy(_COPY, rows(), _COPY_TYPES)
        return last[0]

    def _run(self, sql: str, params: Sequence[object] = ()) -> Any:
        return self.wire.send((sql, params))

    def _pages(
        self, columns: str, session_id: str, start: int, stop: int | None
    ) -> Iterator[tuple[Any, ...]]:
        """Rows ``start..stop`` in version order (without ``stop``, up to the last
        version stored when the read begins), ``PAGE`` at a time (version first)."""
        if stop is None:
            (stop,) = self._run(
                "SELECT coalesce(max(version), 0) FROM events WHERE session_id = %s", (session_id,)
            ).fetchone()
        last = start - 1
        sql = (
            f"SELECT version, {columns} FROM events WHERE session_id = %s AND version > %s"
            " AND version <= %s ORDER BY version LIMIT %s"
        )
        while True:
            rows = self._run(sql, (session_id, last, stop, PAGE)).fetchall()
            yield from rows
            if len(rows) < PAGE:
                return
            last = rows[-1][0]

    def read(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[Recorded]:
        """Rows ``start..stop`` (inclusive) of a session in version order, streamed
        (without ``stop``, up to the last version stored when the read begins)."""
        pages = self._pages(_SELECT, session_id, *read_range(start, stop))
        return (Recorded(*row[1:]) for row in pages)

    def read_payloads(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[tuple[str, str]]:
        """``(type, payload)`` of rows ``start..stop``: the replay hot path."""
        pages = self._pages("type, payload", session_id, *read_range(start, stop))
        return ((type_name, payload) for _, type_name, payload in pages)

    def turn_payloads(self, session_id: str, first: int, last: int) -> Iterator[str]:
        """The payloads of the turns stored at versions ``first..last``, in order."""
        rows = self._run(
            "SELECT payload FROM events WHERE session_id = %s AND version BETWEEN %s AND %s"
            " AND type = 'TurnAppended' ORDER BY version",
            (session_id, first, last),
        ).fetchall()
        return (payload for (payload,) in rows)

    def sessions(self) -> list[str]:
        """Every session id, sorted (a skip scan of the unique index)."""
        return [r[0] for r in self._run(_SESSIONS_SQL).fetchall()]

    def _dicts(self, sql: str, params: tuple[object, ...] = ()) -> list[dict[str, Any]]:
        cursor = self._run(sql, params)
        names = [c.name for c in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    # -- snapshots ---------------------------------------------------------------------
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
        (``replace``: every chunk, the old ones dropped first); sent with the open
        transaction's next statement, or in a transaction of its own."""
        if not self._tx.depth:
            with self.transaction():
                self.save_snapshot(session_id, version, sha256, header, chunks, replace=replace)
            return
        if replace:
            self.wire.defer(("DELETE FROM snapshot_chunks WHERE session_id = %s", (session_id,)))
        self.wire.defer(
            (
                "INSERT INTO snapshots (session_id, version, sha256, state)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE"
                " SET version = excluded.version, sha256 = excluded.sha256,"
                " state = excluded.state",
                (session_id, version, sha256, header),
            ),
            *[
                (
                    "INSERT INTO snapshot_chunks (session_id, ledger, chunk, data)"
                    " VALUES (%s, %s, %s, %s) ON CONFLICT (session_id, ledger, chunk)"
                    " DO UPDATE SET data = excluded.data",
                    (session_id, name, k, data),
                )
                for name, k, data in chunks
            ],
        )

    def load_snapshot(self, session_id: str) -> StoredSnapshot | None:
        """The session's snapshot: header and ``(ledger, chunk data)`` rows in order."""
        row = self._run(
            "SELECT version, sha256, state FROM snapshots WHERE session_id = %s", (session_id,)
        ).fetchone()
        if row is None:
            return None
        chunks = self._run(
            "SELECT ledger, data FROM snapshot_chunks WHERE session_id = %s ORDER BY ledger, chunk",
            (session_id,),
        ).fetchall()
        return StoredSnapshot(
            version=row[0], sha256=row[1], header=bytes(row[2]), chunks=iter(chunks)
        )

    # -- spills (the rows behind _pg_spills.TableSpills) ---------------------------------
    def write_spill(
        self, handle: str, sha256: str, size: int, base: str | None, base_bytes: int, data: bytes
    ) -> None:
        """Store a spill row (joins the open transaction): the bytes after ``base``'s.
        The same spill again is a no-op; other bytes under a taken handle, an
        IntegrityError."""
        (stored,) = self.wire.send(
            (
                "INSERT INTO spill_data (handle, sha256, bytes, base, base_bytes, data)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (handle) DO NOTHING",
                (handle, sha256, size, base, base_bytes, data),
            ),
            ("SELECT sha256 FROM spill_data WHERE handle = %s", (handle,)),
        ).fetchone()
        if stored != sha256:
            raise IntegrityError(f"spill {handle} is already stored with other bytes")

    def spill_row(self, handle: str) -> SpillRow | None:
        """A spill row: its base, the base's size and the bytes after them."""
        row = self._run(
            "SELECT base, base_bytes, data FROM spill_data WHERE handle = %s", (handle,)
        ).fetchone()
        return None if row is None else SpillRow(row[0], row[1], bytes(row[2]))

    def stored_spills(self) -> list[str]:
        """Every handle with a row."""
        return [r[0] for r in self._run("SELECT handle FROM spill_data").fetchall()]

    def spill_handles(self) -> Iterator[str]:
        """Every spill handle any session recorded (distinct)."""
        rows = self._run(
            f"SELECT DISTINCT {_pg_schema.PAYLOAD} ->> 'handle' FROM events WHERE type = 'Spilled'"
        ).fetchall()
        return (handle for (handle,) in rows if isinstance(handle, str))

    def hash_at(self, session_id: str, version: int) -> str | None:
        """The hash of the session's event at ``version``, or ``None`` if there is none."""
        row = self._run(
            "SELECT hash FROM events WHERE session_id = %s AND version = %s", (session_id, version)
        ).fetchone()
        return None if row is None else str(row[0])

    # -- audits ------------------------------------------------------------------------
    def query(
        self, sql: str, *, timeout: float | None, heap_limit: int | None = None
    ) -> QueryResult:
        """One read-only query: a single SELECT (or WITH, VALUES, TABLE, EXPLAIN) in a
        READ ONLY transaction that is rolled back, cancelled after ``timeout`` seconds (none:
        the server's own limit). ``heap_limit`` is SQLite's: the server bounds its own memory."""
        if not sql.strip():
            raise InvalidArgument("empty query")
        timeout = None if timeout is None else seconds(timeout)
        if self._tx.depth:
            raise JournalError("query() runs in its own transaction, not inside another")
        if not _READ_ONLY_START.match(sql):
            raise InvalidArgument(f"query refused{HINT}")
        return stream(self.wire, sql, timeout)

    def integrity_problems(self) -> list[str]:
        """Missing or disabled protections of the log (triggers, the unique key), and
        audit views missing or not tierlog's (compared as the server renders them)."""
        return self.wire.reading(
            lambda conn: (
                _pg_schema.integrity_problems(conn)
                + ([] if _pg_schema.views_behind(conn) else view_problems(conn, _pg_schema.VIEWS))
            )
        )

    def view_notes(self) -> list[str]:
        """The audit views, when an earlier release made them (compared as a whole: a
        writer's open remakes every view when ``tierlog_meta``'s views version is behind)."""
        behind = self.wire.reading(_pg_schema.views_behind)
        return (
            []
            if not behind
            else [
                f"the audit views are as an earlier release made them (views version {behind},"
                f" this release's {_pg_schema.VIEWS_VERSION}): queries of them read that"
                " release's rows until a writer opens the journal and remakes them"
            ]
        )


def _set_lock_timeout(conn: Any, wait: float | None) -> None:
    if wait is None:
        if conn.execute("SHOW lock_timeout").fetchone()[0] != "0":
            return  # configured on the server or in the URL
        wait = LOCK_TIMEOUT
    conn.execute(
        "SELECT set_config('lock_timeout', %s, false)", (f"{max(1, round(wait * 1000))}ms",)
    )
