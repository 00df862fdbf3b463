"""The storage port and what every backend shares.

The port's roles (``Recorder``), the values they take and give, the append path and
its transactions (one base for every backend), the chain, the codec, snapshots, the
audit views' catalogue and spill storage.

Nothing is imported with the package: a name's module is imported when the name is
first used (PEP 562), so opening a journal loads the recorder's modules and not
snapshots, the audit rows' readers or the spill store until they are used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

SNAPSHOT_EVERY = 1000  # events between two snapshots of a session

# Where each name lives.
_HOMES = {
    "eventstore._store._append": ("AppendPath", "expect_version"),
    "eventstore._store._audit_rows": (
        "AuditRows",
        "CompactionRefusalRow",
        "FallbackRow",
        "InvalidationRow",
        "MarkerRefusalRow",
        "NoteRow",
        "SessionSummary",
    ),
    "eventstore._store._chain": (
        "CHAIN_COLUMNS",
        "GENESIS",
        "ChainProblem",
        "ChainRow",
        "ChainWalk",
        "Recorded",
        "chain_hash",
        "check_chain",
        "link_rows",
        "whole_rows",
    ),
    "eventstore._store._clock": ("utc_now",),
    "eventstore._store._codec": (
        "SCHEMA_VERSION",
        "from_payload",
        "from_rows",
        "strict_converter",
        "to_payload",
    ),
    "eventstore._store._links": ("LINK_COLUMNS", "EventWalk", "LinkRow", "Links", "link_rows_of"),
    "eventstore._store._recorder": (
        "AuditReads",
        "EventLog",
        "Recorder",
        "ReplayReads",
        "SnapshotStore",
        "Transfer",
        "read_range",
        "seconds",
    ),
    "eventstore._store._rows": (
        "AuditQueries",
        "Head",
        "QueryResult",
        "Row",
        "StoredSnapshot",
        "check_session_id",
    ),
    "eventstore._store._snapshots": ("Snapshots",),
    "eventstore._store._spills": ("SPILL_DEPTH", "FolderSpills", "handle_for", "is_legacy"),
    "eventstore._store._transaction": ("Statements", "Transactions"),
    "eventstore._store._views": ("COMMON", "REQUIRED", "audit_queries", "render"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A name of the port, imported from its module when first asked for."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


if TYPE_CHECKING:
    from eventstore._store._append import AppendPath, expect_version
    from eventstore._store._audit_rows import (
        AuditRows,
        CompactionRefusalRow,
        FallbackRow,
        InvalidationRow,
        MarkerRefusalRow,
        NoteRow,
        SessionSummary,
    )
    from eventstore._store._chain import (
        CHAIN_COLUMNS,
        GENESIS,
        ChainProblem,
        ChainRow,
        ChainWalk,
        Recorded,
        chain_hash,
        check_chain,
        link_rows,
        whole_rows,
    )
    from eventstore._store._clock import utc_now
    from eventstore._store._codec import (
        SCHEMA_VERSION,
        from_payload,
        from_rows,
        strict_converter,
        to_payload,
    )
    from eventstore._store._links import LINK_COLUMNS, EventWalk, LinkRow, Links, link_rows_of
    from eventstore._store._recorder import (
        AuditReads,
        EventLog,
        Recorder,
        ReplayReads,
        SnapshotStore,
        Transfer,
        read_range,
        seconds,
    )
    from eventstore._store._rows import (
        AuditQueries,
        Head,
        QueryResult,
        Row,
        StoredSnapshot,
        check_session_id,
    )
    from eventstore._store._snapshots import Snapshots
    from eventstore._store._spills import SPILL_DEPTH, FolderSpills, handle_for, is_legacy
    from eventstore._store._transaction import Statements, Transactions
    from eventstore._store._views import COMMON, REQUIRED, audit_queries, render

__all__ = [
    "CHAIN_COLUMNS",
    "COMMON",
    "GENESIS",
    "LINK_COLUMNS",
    "REQUIRED",
    "SCHEMA_VERSION",
    "SNAPSHOT_EVERY",
    "SPILL_DEPTH",
    "AppendPath",
    "AuditQueries",
    "AuditReads",
    "AuditRows",
    "ChainProblem",
    "ChainRow",
    "ChainWalk",
    "CompactionRefusalRow",
    "EventLog",
    "EventWalk",
    "FallbackRow",
    "FolderSpills",
    "Head",
    "InvalidationRow",
    "LinkRow",
    "Links",
    "MarkerRefusalRow",
    "NoteRow",
    "QueryResult",
    "Recorded",
    "Recorder",
    "ReplayReads",
    "Row",
    "SessionSummary",
    "SnapshotStore",
    "Snapshots",
    "Statements",
    "StoredSnapshot",
    "Transactions",
    "Transfer",
    "audit_queries",
    "chain_hash",
    "check_chain",
    "check_session_id",
    "expect_version",
    "from_payload",
    "from_rows",
    "handle_for",
    "is_legacy",
    "link_rows",
    "link_rows_of",
    "read_range",
    "render",
    "seconds",
    "strict_converter",
    "to_payload",
    "utc_now",
    "whole_rows",
]
