"""Are the journal's audit views tierlog's, and do they see every row? The server's
rendering decides the first; row-level security on a journal table denies the second.

A view's stored definition is the server's deparse of its parse tree, not the text
it was created with, so comparing texts would need tierlog to guess how this server
version prints its SQL. Instead each of tierlog's definitions is created again as a
temporary view in a transaction that is rolled back (on a read-only connection too:
the transaction alone is made ``READ WRITE``, and nothing it made outlives it), and
``pg_get_viewdef`` of both is compared: the same server prints the same parse tree
the same way. A view missing that every journal of this schema version has is a
finding too; a view added since (``withdrawals``, ``ingest_notes``) is compared only
where it exists (the next writer creates it).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from eventstore._store import REQUIRED

_STORED = """
SELECT c.relname, pg_get_viewdef(c.oid) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind = 'v'
"""
_EXPECTED = """
SELECT substr(c.relname, length('tierlog_expected_') + 1), pg_get_viewdef(c.oid)
FROM pg_class c WHERE c.relnamespace = pg_my_temp_schema() AND c.relkind = 'v'
AND c.relname LIKE 'tierlog\\_expected\\_%'
"""


_ROW_SECURITY = """
SELECT c.relname, array(SELECT p.polname::text FROM pg_policy p WHERE p.polrelid = c.oid
                        ORDER BY 1)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relrowsecurity
ORDER BY 1
"""


def view_problems(conn: Any, views: Mapping[str, str]) -> list[str]:
    """What is wrong with the journal's audit views (``views``: tierlog's SQL of each),
    and row-level security on a table they read (a policy can hide rows from them)."""
    stored = dict(conn.execute(_STORED).fetchall())
    problems = _row_security(conn) + [
        f"view {name} is missing (dropped?): audits that read it fail until a writer"
        " opens the journal and creates it again"
        for name in REQUIRED
        if name not in stored
    ]
    expected = _rendered(conn, {name: sql for name, sql in views.items() if name in stored})
    problems += [
        f"view {name} was changed (it is not tierlog's): audits that read it are misled"
        for name, definition in sorted(expected.items())
        if stored[name] != definition
    ]
    return problems


def _rendered(conn: Any, views: Mapping[str, str]) -> dict[str, str]:
    """The server's own rendering of each view of ``views`` (empty if this role may
    not create temporary views: the check is then skipped, and said so in the log)."""
    if not views:
        return {}
    import psycopg

    try:
        with conn.transaction(force_rollback=True):
            conn.execute("SET TRANSACTION READ WRITE")
            for name, sql in views.items():
                conn.execute(f"CREATE TEMP VIEW tierlog_expected_{name} AS {sql}".encode())
            return dict(conn.execute(_EXPECTED).fetchall())
    except psycopg.Error as exc:
        logging.getLogger("tierlog").warning(
            "the audit views were not compared with tierlog's: %s", str(exc).splitlines()[0]
        )
        return {}


def _row_security(conn: Any) -> list[str]:
    """Row-level security on a journal table: its policies decide which rows a query
    sees, so an audit (or a role other than the owner) may see fewer than are logged."""
    return [
        f"row-level security is enabled on {table} ({_policies(names)}): queries may"
        " see fewer rows than the log holds (a policy can hide refusals from audits)"
        for table, names in conn.execute(_ROW_SECURITY).fetchall()
    ]


def _policies(names: list[str]) -> str:
    if not names:
        return "no policy: every row hidden from roles other than its owner"
    return f"polic{'y' if len(names) == 1 else 'ies'} {', '.join(names)}"
