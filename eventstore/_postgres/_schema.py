"""The journal's PostgreSQL schema: the SQLite one's tables, triggers and audit views.

It lives in the connection's current schema (the first of its ``search_path``), so
one database can hold several journals. A ``tierlog_meta`` table marks a schema as
a tierlog journal and holds its schema version: a schema with other tables, or
one written by a newer tierlog, is refused before anything is touched.

The audit views have the SQLite views' names and columns, with typed values: the
payload fields that are integers are ``bigint``, ``obligations.outstanding`` is a
``boolean`` (``0``/``1`` on SQLite), and JSON fields are the payload's own text.
"""

from __future__ import annotations

from typing import Any

from eventstore._errors import IntegrityError
from eventstore._store import COMMON, render
from reducers import JournalError

SCHEMA_VERSION = 1
LOCK_SPACE = 0x74696572  # "tier": the first key of every advisory lock tierlog takes
_INSTALL_KEY = 0  # the second key of the lock that serialises installs

_IMMUTABLE = """
        BEGIN
            RAISE EXCEPTION 'tierlog % are immutable: % refused', TG_TABLE_NAME, TG_OP
                USING ERRCODE = 'integrity_constraint_violation';
        END """

TABLES = (
    """CREATE TABLE tierlog_meta (
        key   text PRIMARY KEY,
        value text NOT NULL
    )""",
    """CREATE TABLE events (
        seq            bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id     text    COLLATE "C" NOT NULL,
        version        bigint  NOT NULL CHECK (version >= 1),
        type           text    NOT NULL,
        schema_version integer NOT NULL,
        payload        text    NOT NULL CHECK (payload::json IS NOT NULL),
        recorded_at    text    NOT NULL,
        prev_hash      text    NOT NULL,
        hash           text    NOT NULL,
        UNIQUE (session_id, version)
    )""",
    f"CREATE FUNCTION tierlog_immutable() RETURNS trigger LANGUAGE plpgsql AS $${_IMMUTABLE}$$",
    """CREATE TRIGGER events_no_update BEFORE UPDATE ON events
        FOR EACH ROW EXECUTE FUNCTION tierlog_immutable()""",
    """CREATE TRIGGER events_no_delete BEFORE DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION tierlog_immutable()""",
    """CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION tierlog_immutable()""",
    """CREATE TABLE spill_data (
        handle     text   COLLATE "C" PRIMARY KEY,
        sha256     text   NOT NULL,
        bytes      bigint NOT NULL,
        base       text   COLLATE "C" REFERENCES spill_data (handle),
        base_bytes bigint NOT NULL DEFAULT 0,
        data       bytea  NOT NULL,
        CHECK (bytes = base_bytes + octet_length(data)),
        CHECK ((base IS NULL) = (base_bytes = 0))
    )""",
    """CREATE TRIGGER spill_data_no_update BEFORE UPDATE OR DELETE ON spill_data
        FOR EACH ROW EXECUTE FUNCTION tierlog_immutable()""",
    """CREATE TRIGGER spill_data_no_truncate BEFORE TRUNCATE ON spill_data
        FOR EACH STATEMENT EXECUTE FUNCTION tierlog_immutable()""",
    """CREATE TABLE snapshots (
        session_id text   COLLATE "C" PRIMARY KEY,
        version    bigint NOT NULL,
        sha256     text   NOT NULL,
        state      bytea  NOT NULL
    )""",
    """CREATE TABLE snapshot_chunks (
        session_id text    COLLATE "C" NOT NULL,
        ledger     text    NOT NULL,
        chunk      integer NOT NULL,
        data       bytea   NOT NULL,
        PRIMARY KEY (session_id, ledger, chunk)
    )""",
)

# pg_trigger.tgtype bits: ROW 1, BEFORE 2, INSERT 4, DELETE 8, UPDATE 16, TRUNCATE 32
TRIGGERS = {  # name: (table, tgtype)
    "events_no_update": ("events", 1 | 2 | 16),
    "events_no_delete": ("events", 1 | 2 | 8),
    "events_no_truncate": ("events", 2 | 32),
    "spill_data_no_update": ("spill_data", 1 | 2 | 8 | 16),
    "spill_data_no_truncate": ("spill_data", 2 | 32),
}
_TRIGGERS_SQL = """
SELECT t.tgname, c.relname, t.tgtype, t.tgenabled IN ('O', 'A'),
       t.tgqual IS NULL AND cardinality(t.tgattr::int2[]) = 0, p.proname, pn.nspname
FROM pg_trigger t
JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_namespace pn ON pn.oid = p.pronamespace
WHERE n.nspname = current_schema() AND NOT t.tgisinternal
"""
_FUNCTION_SQL = """
SELECT p.prosrc, l.lanname FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
WHERE n.nspname = current_schema() AND p.proname = 'tierlog_immutable' AND p.pronargs = 0
"""

# PostgreSQL text cannot hold NUL, so ``->>`` refuses a payload's ``\u0000`` escape
# ("unsupported Unicode escape sequence"). The views and the recorder's queries read
# the payload with each such escape (not ``\\u0000``, an escaped backslash) as
# ``\ufffd``; the stored payload, and so its hash, stays as it was recorded.
_NUL = r"'(?<!\\)((?:\\\\)*)\\u0000', '\1\\ufffd', 'g'"


def json_of(column: str) -> str:
    """SQL reading ``column`` (a payload) as ``json``, NUL escapes as U+FFFD."""
    return (
        f"(CASE WHEN strpos({column}, '\\u0000') > 0"
        f" THEN regexp_replace({column}, {_NUL}) ELSE {column} END)::json"
    )


PAYLOAD = json_of("payload")
VIEWS_VERSION = "3"  # tierlog_meta 'views': bumped when a view's SQL changes
_INTS = {
    "index",
    "tokens",
    "lo",
    "hi",
    "bytes",
    "at",
    "tier",
    "input_lo",
    "input_hi",
    "covers_lo",
    "covers_hi",
    "tail_start",
    "tier_depth",
    "checkpoint_at",
    "before",
    "line",
    "count",
    "max_chars",
    "cut",
}


def _field(name: str, path: tuple[str, ...] = ()) -> str:
    """``payload``'s field as text (its own JSON text for arrays and objects), or bigint."""
    keys = "".join(f" -> '{p}'" for p in path)
    text = f"({PAYLOAD}{keys} ->> '{name}')"
    return f"{text}::bigint" if name in _INTS else text


_RULES = (
    "(SELECT string_agg(v.value ->> 'rule', ',' ORDER BY v.n)"
    f" FROM json_array_elements({PAYLOAD} -> 'violations') WITH ORDINALITY AS v(value, n))"
)
_VIOLATIONS = f"({PAYLOAD} -> 'violations')::text"

_AFTER_TURN = (
    f"(SELECT max(({json_of('t.payload')} ->> 'index')::bigint) FROM events t"
    " WHERE t.session_id = events.session_id AND t.type = 'TurnAppended'"
    " AND t.version < events.version)"
)

_OBLIGATIONS = f"""
SELECT {COMMON},
    CASE type WHEN 'CallOpened' THEN 'open_call'
              WHEN 'ConstraintStated' THEN 'constraint'
              ELSE 'negative_fact' END AS kind,
    coalesce({PAYLOAD} ->> 'call_id', {PAYLOAD} ->> 'key') AS key,
    coalesce({PAYLOAD} ->> 'name', {PAYLOAD} ->> 'text',
             {PAYLOAD} ->> 'disposition') AS detail,
    {PAYLOAD} ->> 'reason' AS reason,
    {_AFTER_TURN} AS after_turn,
    CASE type
      WHEN 'CallOpened' THEN NOT EXISTS (SELECT 1 FROM events r
           WHERE r.session_id = events.session_id AND r.type = 'CallResolved'
           AND {json_of("r.payload")} ->> 'call_id' = {json_of("events.payload")} ->> 'call_id')
      WHEN 'ConstraintStated' THEN NOT EXISTS (SELECT 1 FROM events r
           WHERE r.session_id = events.session_id
           AND r.type IN ('ConstraintLifted', 'ConstraintStated')
           AND r.version > events.version
           AND {json_of("r.payload")} ->> 'key' = {json_of("events.payload")} ->> 'key')
      ELSE NOT EXISTS (SELECT 1 FROM events r
           WHERE r.session_id = events.session_id AND r.type = 'ItemDisposed'
           AND r.version > events.version
           AND {json_of("r.payload")} ->> 'key' = {json_of("events.payload")} ->> 'key')
      END AS outstanding
FROM events WHERE type IN ('CallOpened', 'ConstraintStated', 'ItemDisposed')
"""

VIEWS: dict[str, str] = {
    **render(_field, rules=_RULES, violations=_VIOLATIONS),
    "obligations": _OBLIGATIONS,
    # not a SPEC view: turns the runtime took back (pop_item) and context clears
    "withdrawals": f"""SELECT {COMMON},
    CASE type WHEN 'TurnRetracted' THEN 'retracted' ELSE 'cleared' END AS kind,
    coalesce({_field("index")}, 0) AS from_turn,
    coalesce({_field("index")} + 1, {_field("before")}) AS to_turn,
    {_field("reason")} AS reason
FROM events WHERE type IN ('TurnRetracted', 'ContextCleared')""",
}


def statements() -> list[str]:
    """Every statement that creates the schema, in order."""
    views = [f"CREATE VIEW {name} AS {sql}" for name, sql in VIEWS.items()]
    meta = [
        "INSERT INTO tierlog_meta (key, value) VALUES ('application', 'tierlog')",
        f"INSERT INTO tierlog_meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}')",
        f"INSERT INTO tierlog_meta (key, value) VALUES ('views', '{VIEWS_VERSION}')",
    ]
    return [*TABLES, *views, *meta]


def install(conn: Any) -> None:
    """Create the schema in an empty current schema; accept a current journal; refuse
    anything else. Concurrent installs serialise on an advisory lock."""
    if _is_journal(conn):
        _refresh_views(conn)
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, _INSTALL_KEY))
        if not _is_journal(conn):  # another process may have won the race
            for statement in statements():
                conn.execute(statement.encode())


def _refresh_views(conn: Any) -> None:
    """Views added or changed after a journal was created (same schema version: views
    only read): missing ones are created; all are replaced when ``tierlog_meta``'s
    ``views`` is older than :data:`VIEWS_VERSION`."""
    have = {
        row[0]
        for row in conn.execute(
            "SELECT viewname FROM pg_views WHERE schemaname = current_schema()"
        ).fetchall()
    }
    if set(VIEWS) <= have and _views_version(conn) == VIEWS_VERSION:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, _INSTALL_KEY))
        for name, sql in VIEWS.items():
            conn.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")
        conn.execute(
            "INSERT INTO tierlog_meta (key, value) VALUES ('views', %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (VIEWS_VERSION,),
        )


def views_behind(conn: Any) -> str | None:
    """The views version an earlier release recorded, if this journal's is one
    (``None``: this release's views, or none recorded yet)."""
    stored = _views_version(conn)
    if stored is None or not stored.isdigit() or int(stored) >= int(VIEWS_VERSION):
        return None
    return stored


def _views_version(conn: Any) -> str | None:
    row = conn.execute("SELECT value FROM tierlog_meta WHERE key = 'views'").fetchone()
    return None if row is None else str(row[0])


def check(conn: Any) -> None:
    """Raise :class:`JournalError` unless the current schema holds a journal we read."""
    if not _is_journal(conn):
        raise JournalError("not a tierlog journal (an empty PostgreSQL schema)")


def _is_journal(conn: Any) -> bool:
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    if schema is None:
        raise JournalError("no current schema: the search_path names no existing schema")
    names = {
        row[0]
        for row in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind IN ('r', 'v', 'p', 'm', 'f')",
            (schema,),
        )
    }
    if "tierlog_meta" not in names:
        if names:
            raise JournalError(
                f"not a tierlog journal (schema {schema!r} holds tables of something else)"
            )
        return False
    meta = dict(conn.execute("SELECT key, value FROM tierlog_meta").fetchall())
    if meta.get("application") != "tierlog":
        raise JournalError(f"not a tierlog journal (schema {schema!r}: tierlog_meta says so)")
    try:
        version = int(meta.get("schema_version", "0"))
    except ValueError:
        raise JournalError(
            f"not a tierlog journal (schema {schema!r}: tierlog_meta's schema_version"
            f" {meta.get('schema_version')!r} is not a number)"
        ) from None
    if version > SCHEMA_VERSION:
        raise JournalError(
            f"this journal has schema version {version}; this tierlog reads up to "
            f"{SCHEMA_VERSION}: upgrade tierlog"
        )
    _check_events_table(conn)
    return True


# The events table's columns as tierlog creates them: (name, type, nullable, collation).
_COLUMNS = (
    ("seq", "bigint", "NO", None),
    ("session_id", "text", "NO", "C"),
    ("version", "bigint", "NO", None),
    ("type", "text", "NO", None),
    ("schema_version", "integer", "NO", None),
    ("payload", "text", "NO", None),
    ("recorded_at", "text", "NO", None),
    ("prev_hash", "text", "NO", None),
    ("hash", "text", "NO", None),
)
_GUARDED = ("events", "spill_data")  # the tables whose writes only tierlog may shape
# Its CHECK constraints, as pg_get_constraintdef words them.
_CHECKS = ["CHECK (((payload)::json IS NOT NULL))", "CHECK ((version >= 1))"]


def _check_events_table(conn: Any) -> None:
    """IntegrityError unless the events table has tierlog's columns (names, types, NOT
    NULL, collation): an ``ALTER TABLE`` that changed one lets it hold values no reader
    expects, or makes two session ids one."""
    columns = conn.execute(
        "SELECT column_name, data_type, is_nullable, collation_name"
        " FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = 'events'"
        " ORDER BY ordinal_position"
    ).fetchall()
    if tuple(tuple(column) for column in columns) != _COLUMNS:
        raise IntegrityError(
            "the events table is not the one tierlog creates: its columns were changed"
            " (edited by hand?)"
        )


def integrity_problems(conn: Any) -> list[str]:
    """What protects the log and is missing, disabled or changed (the triggers, the
    function they run, the unique key, the CHECKs), and what could change or drop an
    append unseen (a trigger or rule of someone else's on a journal table)."""
    unprotected = ": the log is not protected against UPDATE and DELETE"
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    found = {row[0]: row[1:] for row in conn.execute(_TRIGGERS_SQL).fetchall()}
    problems = [
        f"trigger {name} on {row[0]} is not tierlog's: it may change or drop what is written"
        for name, row in found.items()
        if row[0] in _GUARDED and name not in TRIGGERS
    ]
    problems += [
        f"rule {name} on {table} is not tierlog's: it may change or drop what is written"
        for name, table in conn.execute(
            "SELECT rulename, tablename FROM pg_rules WHERE schemaname = current_schema()"
        ).fetchall()
        if table in _GUARDED
    ]
    for name, (table, tgtype) in TRIGGERS.items():
        if name not in found:
            problems.append(f"trigger {name} is missing{unprotected}")
            continue
        on, kind, enabled, unconditional, function, function_schema = found[name]
        if not enabled:
            problems.append(f"trigger {name} is disabled{unprotected}")
        elif (on, kind, unconditional, function, function_schema) != (
            table,
            tgtype,
            True,
            "tierlog_immutable",
            schema,
        ):
            problems.append(f"trigger {name} was changed (it is not tierlog's){unprotected}")
    body = conn.execute(_FUNCTION_SQL).fetchall()
    if [(" ".join(src.split()), lang) for src, lang in body] != [
        (" ".join(_IMMUTABLE.split()), "plpgsql")
    ]:
        problems.append(f"function tierlog_immutable() was changed or is missing{unprotected}")
    constraints = conn.execute(
        "SELECT c.contype, pg_get_constraintdef(c.oid) FROM pg_constraint c"
        " JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace"
        " WHERE n.nspname = current_schema() AND t.relname = 'events' ORDER BY 2"
    ).fetchall()
    if ("u", "UNIQUE (session_id, version)") not in [tuple(row) for row in constraints]:
        problems.append("the UNIQUE (session_id, version) constraint on events is missing")
    if [definition for kind, definition in constraints if kind == "c"] != _CHECKS:
        problems.append(
            "the CHECK constraints on events (version >= 1, payload is JSON) were changed"
            " or are missing: rows no reader expects may be stored"
        )
    return problems
