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

from reducers import JournalError

SCHEMA_VERSION = 1
LOCK_SPACE = 0x74696572  # "tier": the first key of every advisory lock tierlog takes
_INSTALL_KEY = 0  # the second key of the lock that serialises installs

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
    """CREATE FUNCTION tierlog_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'tierlog % are immutable: % refused', TG_TABLE_NAME, TG_OP
                USING ERRCODE = 'integrity_constraint_violation';
        END $$""",
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

TRIGGERS = (
    "events_no_update",
    "events_no_delete",
    "events_no_truncate",
    "spill_data_no_update",
    "spill_data_no_truncate",
)

_COMMON = "session_id, version, seq, recorded_at"
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
}


def _field(name: str, path: tuple[str, ...] = ()) -> str:
    """``payload``'s field as text (its own JSON text for arrays and objects), or bigint."""
    keys = "".join(f" -> '{p}'" for p in path)
    text = f"(payload::json{keys} ->> '{name}')"
    return f"{text}::bigint" if name in _INTS else text


def _view(type_name: str, columns: dict[str, str]) -> str:
    cols = ", ".join(f"{expr} AS {name}" for name, expr in columns.items())
    return f"SELECT {_COMMON}, {cols} FROM events WHERE type = '{type_name}'"


def _fields(*names: str, path: tuple[str, ...] = ()) -> dict[str, str]:
    return {name: _field(name, path) for name in names}


_RULES = (
    "(SELECT string_agg(v.value ->> 'rule', ',' ORDER BY v.n)"
    " FROM json_array_elements(payload::json -> 'violations') WITH ORDINALITY AS v(value, n))"
)
_VIOLATIONS = "(payload::json -> 'violations')::text"

_AFTER_TURN = (
    "(SELECT max((t.payload::json ->> 'index')::bigint) FROM events t"
    " WHERE t.session_id = events.session_id AND t.type = 'TurnAppended'"
    " AND t.version < events.version)"
)

_OBLIGATIONS = f"""
SELECT {_COMMON},
    CASE type WHEN 'CallOpened' THEN 'open_call'
              WHEN 'ConstraintStated' THEN 'constraint'
              ELSE 'negative_fact' END AS kind,
    coalesce(payload::json ->> 'call_id', payload::json ->> 'key') AS key,
    coalesce(payload::json ->> 'name', payload::json ->> 'text',
             payload::json ->> 'disposition') AS detail,
    payload::json ->> 'reason' AS reason,
    {_AFTER_TURN} AS after_turn,
    CASE type
      WHEN 'CallOpened' THEN NOT EXISTS (SELECT 1 FROM events r
           WHERE r.session_id = events.session_id AND r.type = 'CallResolved'
           AND r.payload::json ->> 'call_id' = events.payload::json ->> 'call_id')
      WHEN 'ConstraintStated' THEN NOT EXISTS (SELECT 1 FROM events r
           WHERE r.session_id = events.session_id AND r.type = 'ConstraintLifted'
           AND r.version > events.version
           AND r.payload::json ->> 'key' = events.payload::json ->> 'key')
      ELSE true END AS outstanding
FROM events WHERE type IN ('CallOpened', 'ConstraintStated', 'ItemDisposed')
"""

_COMPACTION = (
    "node_id",
    "tier",
    "input_lo",
    "input_hi",
    "covers_lo",
    "covers_hi",
    "tail_start",
    "summary",
    "tokens",
    "dispositions",
    "resolved_ids",
    "unresolved_ids",
    "constraints",
    "replaces",
)

VIEWS: dict[str, str] = {
    "turns": _view(
        "TurnAppended",
        {"turn_index": _field("index"), **_fields("role", "content", "tokens")},
    ),
    "truncations": _view("Truncated", _fields("lo", "hi", "reason")),
    "spills": _view("Spilled", _fields("lo", "hi", "handle", "sha256", "bytes")),
    "compactions": _view("Compacted", _fields(*_COMPACTION)),
    "compaction_refusals": _view(
        "CompactionRefused",
        {
            **_fields(*_COMPACTION[:8], path=("proposal",)),
            "action": _field("action"),
            "rules": _RULES,
            "violations": _VIOLATIONS,
        },
    ),
    "markers": _view(
        "MarkerEmitted", _fields("marker_id", "node_id", "tier_depth", "resolved_ids")
    ),
    "marker_refusals": _view(
        "MarkerRefused",
        {**_fields("marker_id", "node_id"), "rules": _RULES, "violations": _VIOLATIONS},
    ),
    "marker_invalidations": _view("MarkerInvalidated", _fields("marker_id", "rule", "reason")),
    "resumes": _view(
        "Resumed", _fields("marker_id", "source", "checkpoint_at", "context_sha256", "reason")
    ),
    "obligations": _OBLIGATIONS,
    # not a SPEC view: turns the runtime took back (pop_item) and context clears
    "withdrawals": f"""SELECT {_COMMON},
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
    ]
    return [*TABLES, *views, *meta]


def install(conn: Any) -> None:
    """Create the schema in an empty current schema; accept a current journal; refuse
    anything else. Concurrent installs serialise on an advisory lock."""
    if _is_journal(conn):
        _add_missing_views(conn)
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, _INSTALL_KEY))
        if not _is_journal(conn):  # another process may have won the race
            for statement in statements():
                conn.execute(statement.encode())


def _add_missing_views(conn: Any) -> None:
    """Views added after a journal was created (same schema version: views only read)."""
    have = {
        row[0]
        for row in conn.execute(
            "SELECT viewname FROM pg_views WHERE schemaname = current_schema()"
        ).fetchall()
    }
    if set(VIEWS) <= have:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, _INSTALL_KEY))
        for name, sql in VIEWS.items():
            if name not in have:
                conn.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")


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
    version = int(meta.get("schema_version", "0"))
    if version > SCHEMA_VERSION:
        raise JournalError(
            f"this journal has schema version {version}; this tierlog reads up to "
            f"{SCHEMA_VERSION}: upgrade tierlog"
        )
    return True


def integrity_problems(conn: Any) -> list[str]:
    """What protects the log and is missing or disabled (triggers, the unique key)."""
    enabled = dict(
        conn.execute(
            "SELECT t.tgname, t.tgenabled <> 'D' FROM pg_trigger t"
            " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND NOT t.tgisinternal"
        ).fetchall()
    )
    problems = [
        f"trigger {name} is {'disabled' if name in enabled else 'missing'}: the log is not"
        " protected against UPDATE and DELETE"
        for name in TRIGGERS
        if not enabled.get(name)
    ]
    unique = conn.execute(
        "SELECT count(*) FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid"
        " JOIN pg_namespace n ON n.oid = t.relnamespace"
        " WHERE n.nspname = current_schema() AND t.relname = 'events' AND c.contype = 'u'"
    ).fetchone()[0]
    if not unique:
        problems.append("the UNIQUE (session_id, version) constraint on events is missing")
    return problems
