"""The audit views both recorders create, as data: each view's event type and the
payload fields it shows as columns.

The SPEC's views (``turns``, ``truncations``, ``spills``, ``compactions``,
``compaction_refusals``, ``markers``, ``marker_refusals``, ``marker_invalidations``,
``resumes``) and ``retells`` are one row per event of their type, a column per
payload field; each schema renders them in its own SQL dialect with ``render``,
handing in how it reads a field and a refusal's rules and violations. The views
that need more than fields (``obligations``, ``withdrawals``) stay written out in
each schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

COMMON = "session_id, version, seq, recorded_at"

REQUIRED = (
    "turns",
    "truncations",
    "spills",
    "compactions",
    "compaction_refusals",
    "markers",
    "marker_refusals",
    "marker_invalidations",
    "resumes",
    "obligations",
)
"""The views every journal of schema version 1 has had since it was created (0.1 on):
one missing is a finding. Views added since (``withdrawals``, ``ingest_notes``) are
created by the next writer that opens a journal, and checked wherever they exist."""

Field = tuple[str, tuple[str, ...]]
"""A payload key, under the object keys of its path: ``("lo", ())``,
``("tier", ("proposal",))``."""

COMPACTION = (
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


def fields(*names: str, path: tuple[str, ...] = ()) -> dict[str, Field]:
    """Columns named as the payload keys they show."""
    return {name: (name, path) for name in names}


@attrs.frozen
class View:
    """One row per event of ``type_name``; ``refusal`` adds ``rules`` and ``violations``."""

    type_name: str
    columns: Mapping[str, Field]
    refusal: bool = False


VIEWS: dict[str, View] = {
    "turns": View(
        "TurnAppended", {"turn_index": ("index", ()), **fields("role", "content", "tokens")}
    ),
    "truncations": View("Truncated", fields("lo", "hi", "reason")),
    "spills": View("Spilled", fields("lo", "hi", "handle", "sha256", "bytes")),
    "compactions": View("Compacted", fields(*COMPACTION)),
    "compaction_refusals": View(
        "CompactionRefused",
        {**fields(*COMPACTION[:8], path=("proposal",)), **fields("action")},
        refusal=True,
    ),
    "markers": View("MarkerEmitted", fields("marker_id", "node_id", "tier_depth", "resolved_ids")),
    "marker_refusals": View("MarkerRefused", fields("marker_id", "node_id"), refusal=True),
    "marker_invalidations": View("MarkerInvalidated", fields("marker_id", "rule", "reason")),
    "resumes": View(
        "Resumed", fields("marker_id", "source", "checkpoint_at", "context_sha256", "reason")
    ),
    # not a SPEC view: what tierlog guessed, skipped or fell back on reading a transcript
    "ingest_notes": View("Noted", fields("kind", "line", "count", "text")),
    # not a SPEC view: what each re-tell turn (Session.retell) states, and what it cut
    "retells": View(
        "Retold",
        {
            "turn_index": ("index", ()),
            **fields("constraints", "dispositions", "calls", "max_chars", "cut"),
        },
    ),
}


def render(
    field: Callable[[str, tuple[str, ...]], str], rules: str, violations: str
) -> dict[str, str]:
    """Every view of ``VIEWS`` as a ``SELECT``: ``field(key, path)`` reads a payload
    field in the dialect, ``rules`` and ``violations`` are a refusal's columns."""
    out = {}
    for name, view in VIEWS.items():
        columns = {column: field(key, path) for column, (key, path) in view.columns.items()}
        if view.refusal:
            columns |= {"rules": rules, "violations": violations}
        shown = ", ".join(f"{expr} AS {column}" for column, expr in columns.items())
        out[name] = f"SELECT {COMMON}, {shown} FROM events WHERE type = '{view.type_name}'"
    return out


def audit_queries(views: Mapping[str, str], param: str) -> tuple[str, str, str, str, str]:
    """``AuditQueries.AUDIT_SQL`` for a schema whose views' SQL is ``views`` and whose
    parameter marker is ``param``: each query reads tierlog's own SQL of its view as a
    subquery, never the view stored in the database, so an audit is not misled by a
    view someone replaced (``verify`` reports one on SQLite)."""

    def rows(columns: str, view: str, where: str = "") -> str:
        return (
            f"SELECT {columns} FROM ({views[view]}) AS {view}"
            f" WHERE session_id = {param}{where} ORDER BY version"
        )

    return (
        rows("version, node_id, action, rules, violations", "compaction_refusals"),
        rows("version, marker_id, node_id, rules, violations", "marker_refusals"),
        rows("version, marker_id, rule, reason", "marker_invalidations"),
        rows(
            "version, marker_id, checkpoint_at, reason", "resumes", " AND source = 'raw_checkpoint'"
        ),
        rows("version, kind, line, count, text", "ingest_notes"),
    )
