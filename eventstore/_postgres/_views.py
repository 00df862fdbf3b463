"""Are the journal's audit views tierlog's? The server's rendering decides.

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


def view_problems(conn: Any, views: Mapping[str, str]) -> list[str]:
    """What is wrong with the journal's audit views (``views``: tierlog's SQL of each)."""
    stored = dict(conn.execute(_STORED).fetchall())
    problems = [
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
