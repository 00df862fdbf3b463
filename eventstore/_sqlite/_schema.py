"""The journal's SQLite schema: tables, immutability triggers and audit views.

``PRAGMA application_id`` marks a file as a tierlog journal and
``PRAGMA user_version`` holds the schema version, so a foreign database or one
written by a newer tierlog is refused before anything is touched.
"""

from __future__ import annotations

import sqlite3

from eventstore._errors import IntegrityError
from eventstore._store import COMMON, REQUIRED, render
from reducers import JournalError

APPLICATION_ID = 0x74696572  # "tier"
SCHEMA_VERSION = 1

TABLES = (
    """CREATE TABLE events (
        seq            INTEGER PRIMARY KEY,
        session_id     TEXT    NOT NULL,
        version        INTEGER NOT NULL CHECK (version >= 1),
        type           TEXT    NOT NULL,
        schema_version INTEGER NOT NULL,
        payload        TEXT    NOT NULL CHECK (json_valid(payload)),
        recorded_at    TEXT    NOT NULL,
        prev_hash      TEXT    NOT NULL,
        hash           TEXT    NOT NULL,
        UNIQUE (session_id, version)
    ) STRICT""",
    """CREATE TRIGGER events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'tierlog events are immutable: UPDATE refused'); END""",
    """CREATE TRIGGER events_no_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'tierlog events are immutable: DELETE refused'); END""",
    """CREATE TABLE snapshots (
        session_id TEXT    PRIMARY KEY,
        version    INTEGER NOT NULL,
        sha256     TEXT    NOT NULL,
        state      BLOB    NOT NULL
    ) STRICT""",
    """CREATE TABLE snapshot_chunks (
        session_id TEXT    NOT NULL,
        ledger     TEXT    NOT NULL,
        chunk      INTEGER NOT NULL,
        data       BLOB    NOT NULL,
        PRIMARY KEY (session_id, ledger, chunk)
    ) STRICT, WITHOUT ROWID""",
)


def _field(name: str, path: tuple[str, ...] = ()) -> str:
    """``payload``'s field (its own JSON text for arrays and objects)."""
    return f"payload ->> '$.{''.join(p + '.' for p in path)}{name}'"


_AFTER_TURN = (
    "(SELECT max(t.payload ->> '$.index') FROM events t WHERE t.session_id = events.session_id"
    " AND t.type = 'TurnAppended' AND t.version < events.version)"
)


def _later(types: str, column: str) -> str:
    """No event of ``types`` about the same ``column`` later in the session."""
    return f"""NOT EXISTS (SELECT 1 FROM events r
           WHERE r.session_id = events.session_id AND r.type {types}
           AND r.version > events.version
           AND r.payload ->> '$.{column}' = events.payload ->> '$.{column}')"""


def _obligations(constraint: str, negative_fact: str) -> str:
    """The obligations view, with what makes a constraint and a negative fact outstanding."""
    return f"""
SELECT {COMMON},
    CASE type WHEN 'CallOpened' THEN 'open_call'
              WHEN 'ConstraintStated' THEN 'constraint'
              ELSE 'negative_fact' END AS kind,
    coalesce(payload ->> '$.call_id', payload ->> '$.key') AS key,
    coalesce(payload ->> '$.name', payload ->> '$.text', payload ->> '$.disposition') AS detail,
    payload ->> '$.reason' AS reason,
    {_AFTER_TURN} AS after_turn,
    CASE type
      WHEN 'CallOpened' THEN NOT EXISTS (SELECT 1 FROM events r
           WHERE r.session_id = events.session_id AND r.type = 'CallResolved'
           AND r.payload ->> '$.call_id' = events.payload ->> '$.call_id')
      WHEN 'ConstraintStated' THEN {constraint}
      ELSE {negative_fact} END AS outstanding
FROM events WHERE type IN ('CallOpened', 'ConstraintStated', 'ItemDisposed')
"""


# Outstanding as the state holds it: a key's latest statement, until lifted (a
# restated constraint, or a negative fact disposed of again, replaces the earlier one).
_OBLIGATIONS = _obligations(
    _later("IN ('ConstraintLifted', 'ConstraintStated')", "key"),
    _later("= 'ItemDisposed'", "key"),
)

# What earlier releases created, which a writer's open replaces: every statement of a
# pending key and every negative fact counted outstanding (0.1 and 0.2).
FORMER_VIEWS: dict[str, tuple[str, ...]] = {
    "obligations": (_obligations(_later("= 'ConstraintLifted'", "key"), "1"),),
}

VIEWS: dict[str, str] = {
    **render(
        _field,
        rules=(
            "(SELECT group_concat(value ->> '$.rule', ',') FROM json_each(payload, '$.violations'))"
        ),
        violations="payload -> '$.violations'",
    ),
    "obligations": _OBLIGATIONS,
    # not a SPEC view: turns the runtime took back (pop_item) and context clears
    "withdrawals": f"""SELECT {COMMON},
    CASE type WHEN 'TurnRetracted' THEN 'retracted' ELSE 'cleared' END AS kind,
    coalesce(payload ->> '$.index', 0) AS from_turn,
    coalesce((payload ->> '$.index') + 1, payload ->> '$.before') AS to_turn,
    payload ->> '$.reason' AS reason
FROM events WHERE type IN ('TurnRetracted', 'ContextCleared')""",
}


def install(conn: sqlite3.Connection) -> None:
    """Bring a new or current journal's schema up to date; refuse anything else."""
    if _is_journal(conn):
        _add_missing_views(conn)
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not _is_journal(conn):  # another process may have won the race
            _create(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def check(conn: sqlite3.Connection) -> None:
    """Raise :class:`JournalError` unless ``conn`` holds a journal this tierlog reads."""
    if not _is_journal(conn):
        raise JournalError("not a tierlog journal (an empty or foreign SQLite database)")


def _is_journal(conn: sqlite3.Connection) -> bool:
    """Whether ``conn`` holds a journal (``False``: an empty file), read in one snapshot:
    a file another process is creating is seen before or after, never half made."""
    if conn.in_transaction:
        return _looks_like_journal(conn)
    conn.execute("BEGIN")
    try:
        return _looks_like_journal(conn)
    finally:
        conn.execute("COMMIT")


def _looks_like_journal(conn: sqlite3.Connection) -> bool:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id == APPLICATION_ID:
        user_version = conn.execute("PRAGMA user_version").fetchone()[0]
        if user_version > SCHEMA_VERSION:
            raise JournalError(
                f"this journal has schema version {user_version}; this tierlog reads up to "
                f"{SCHEMA_VERSION}: upgrade tierlog"
            )
        _check_events_table(conn)
        return True
    if app_id != 0 or conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]:
        if app_id == 0 and _same(_events_sql(conn), TABLES[0]):
            raise JournalError(
                "not marked as a tierlog journal, though it holds tierlog's events table"
                " (a restore from `.dump` leaves out the marks): if it is one, set"
                f" PRAGMA application_id = {APPLICATION_ID} and PRAGMA user_version ="
                f" {SCHEMA_VERSION} on it"
            )
        raise JournalError("not a tierlog journal (a SQLite database of something else)")
    return False


def _events_sql(conn: sqlite3.Connection) -> object:
    found = conn.execute(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'events'"
    ).fetchone()
    return None if found is None else found[0]


TRIGGERS = {"events_no_update": TABLES[1], "events_no_delete": TABLES[2]}
_UNPROTECTED = ": the log is not protected against UPDATE and DELETE"


def schema_problems(conn: sqlite3.Connection) -> list[str]:
    """What in the schema around ``events`` is not tierlog's: an append-only trigger
    missing or changed, a trigger of someone else's on ``events`` (it could change or
    drop what is appended), an audit view whose SQL was changed (hand-written SQL
    audits read them; ``audit`` and ``report`` run tierlog's own SQL of them), and a
    view every journal of this schema version has (``REQUIRED``) that is missing. The
    next writer adds a missing view back."""
    problems = []
    triggers = {
        name: (table, sql)
        for name, table, sql in conn.execute(
            "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger'"
        ).fetchall()
    }
    for name, expected in TRIGGERS.items():
        if name not in triggers:
            problems.append(f"trigger {name} is missing{_UNPROTECTED}")
        elif not _same(triggers[name][1], expected):
            problems.append(f"trigger {name} was changed (it is not tierlog's){_UNPROTECTED}")
    problems += [
        f"trigger {name} on events is not tierlog's: it may change or drop what is appended"
        for name, (table, _) in triggers.items()
        if name not in TRIGGERS and isinstance(table, str) and table.lower() == "events"
    ]
    views = dict(conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'view'"))
    problems += [
        f"view {name} is missing (dropped?): audits that read it fail until a writer"
        " opens the journal and creates it again"
        for name in REQUIRED
        if name not in views
    ]
    problems += [
        f"view {name} was changed (it is not tierlog's): audits that read it are misled"
        for name in VIEWS
        if name in views
        and not _same(views[name], view_sql(name))
        and not _former(name, views[name])
    ]
    return problems


def view_notes(conn: sqlite3.Connection) -> list[str]:
    """The views this journal holds as an earlier release made them (``FORMER_VIEWS``)."""
    views = dict(conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'view'"))
    return [former_note(name) for name in VIEWS if name in views and _former(name, views[name])]


def former_note(name: str) -> str:
    """What ``verify`` says of a view an earlier release made."""
    return (
        f"view {name} is as an earlier release made it: queries of it read that release's"
        " rows until a writer opens the journal and remakes it"
    )


def _same(stored: object, sql: str) -> bool:
    """Whether ``stored`` (a ``sqlite_schema.sql``) is ``sql``, whitespace aside."""
    return isinstance(stored, str) and stored.split() == sql.split()


def _check_events_table(conn: sqlite3.Connection) -> None:
    """IntegrityError unless the ``events`` table is the one tierlog creates: a schema
    edited in place (``PRAGMA writable_schema``: STRICT, NOT NULL, a CHECK or the UNIQUE
    taken off) lets a column hold values no reader expects. Whitespace aside, the
    stored ``CREATE TABLE`` is the one tierlog ran (every release so far)."""
    if not _same(_events_sql(conn), TABLES[0]):
        raise IntegrityError(
            "the events table is not the one tierlog creates: its schema was edited"
            " (edited by hand?)"
        )


def _create(conn: sqlite3.Connection) -> None:
    for statement in TABLES:
        conn.execute(statement)
    for name in VIEWS:
        conn.execute(view_sql(name))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _add_missing_views(conn: sqlite3.Connection) -> None:
    """Views added after a journal was created, and views an earlier release created
    (``FORMER_VIEWS``), made as this release makes them (same schema version: views
    only read)."""
    if not _missing_views(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for name in _missing_views(conn):  # read again under the lock: another may have won
            conn.execute(f'DROP VIEW IF EXISTS "{name}"')
            conn.execute(view_sql(name))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def view_sql(name: str) -> str:
    """The statement that creates audit view ``name`` (the text ``verify`` compares)."""
    return f'CREATE VIEW "{name}" AS {VIEWS[name]}'


def _missing_views(conn: sqlite3.Connection) -> list[str]:
    """The views of ``VIEWS`` this journal lacks, or holds as an earlier release made them."""
    have = dict(conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'view'"))
    return [name for name in VIEWS if name not in have or _former(name, have[name])]


def _former(name: str, stored: object) -> bool:
    """Whether ``stored`` is view ``name`` as an earlier release created it."""
    return any(
        _same(stored, f'CREATE VIEW "{name}" AS {sql}') for sql in FORMER_VIEWS.get(name, ())
    )
