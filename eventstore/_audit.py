"""``verify`` and ``audit``: what a debugger and an auditor ask of a journal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs

from eventstore._journal import Journal
from eventstore._replay import divergences
from eventstore._session import Session
from invariants import carries_call
from reducers import Node, SessionState, in_spans


@attrs.frozen(kw_only=True)
class Finding:
    """One problem ``verify`` found; ``version`` is None for file-wide problems."""

    check: str
    session_id: str | None
    version: int | None
    problem: str
    fatal: bool = True  # False for notes that leave the journal sound (orphan spill files)

    def __str__(self) -> str:
        where = f"{self.session_id} v{self.version}" if self.session_id else "database"
        return f"{self.check:<9} {where}: {self.problem}"


Progress = Callable[[str], None]


def verify(
    journal: Journal, session_ids: list[str] | None = None, progress: Progress | None = None
) -> list[Finding]:
    """Integrity check, hash chains, spill files, snapshots, and every decision re-derived."""
    found = [
        Finding(check="integrity", session_id=None, version=None, problem=row[0])
        for row in journal.store.conn.execute("PRAGMA integrity_check")
        if row[0] != "ok"
    ]
    for session_id in session_ids or journal.sessions():
        if progress:
            progress(session_id)
        found += list(_verify_session(journal, session_id))
    if session_ids is None:
        found += orphan_spills(journal)
    return found


def _verify_session(journal: Journal, session_id: str) -> Iterator[Finding]:
    """One pass: walk the chain, and replay what it yields through the decisions."""
    session = Session(journal, session_id, SessionState())  # no trusted fold of the log
    walk = journal.store.walk(session_id)
    snap = journal.snapshots.check(session_id)
    compare = (snap.version, snap.sha256) if snap and snap.problem is None else None
    for d in divergences(session, walk, snapshot=compare):
        yield Finding(check=d.check, session_id=session_id, version=d.version, problem=d.problem)
    if walk.problem is not None:
        p = walk.problem
        yield Finding(check="chain", session_id=session_id, version=p.version, problem=p.problem)
    if snap is not None and snap.problem is not None:
        yield _snapshot_finding(journal, session_id, snap.version, snap.problem)


def _snapshot_finding(journal: Journal, session_id: str, version: int, problem: str) -> Finding:
    head = journal.store.head(session_id)[0]
    if version > head:
        problem = f"a snapshot at version {version} is ahead of the log: events are missing"
    else:
        problem = f"the snapshot at version {version} is not trusted: {problem}"
    return Finding(
        check="snapshot", session_id=session_id, version=min(version, head + 1), problem=problem
    )


def orphan_spills(journal: Journal) -> list[Finding]:
    """Files in the spill root that no recorded spill uses: what a crash between writing
    a spill and committing its event leaves. A note, not a fault (``fatal=False``)."""
    return [
        Finding(
            check="orphan",
            session_id=None,
            version=None,
            problem=f"{name} in {journal.spills.root.name}/ is used by no spill event"
            " (tierlog verify --clean removes it)",
            fatal=False,
        )
        for name in journal.spills.orphans(journal.store.spill_handles())
    ]


def clean_spills(journal: Journal) -> list[Finding]:
    """Remove the orphan spill files, holding the write lock so that no writer is between
    writing a spill and committing it; returns what was removed, as notes."""
    with journal.store.transaction():
        names = journal.spills.orphans(journal.store.spill_handles())
        journal.spills.remove(names)
    return [
        Finding(
            check="orphan",
            session_id=None,
            version=None,
            problem=f"removed {name} from {journal.spills.root.name}/",
            fatal=False,
        )
        for name in names
    ]


_AUDIT_QUERIES = {
    "compaction_refusals": (
        "SELECT version, node_id, action, rules, violations FROM compaction_refusals"
        " WHERE session_id = ? ORDER BY version"
    ),
    "marker_refusals": (
        "SELECT version, marker_id, node_id, rules, violations FROM marker_refusals"
        " WHERE session_id = ? ORDER BY version"
    ),
    "marker_invalidations": (
        "SELECT version, marker_id, rule, reason FROM marker_invalidations"
        " WHERE session_id = ? ORDER BY version"
    ),
    "raw_fallbacks": (
        "SELECT version, marker_id, checkpoint_at, reason FROM resumes"
        " WHERE session_id = ? AND source = 'raw_checkpoint' ORDER BY version"
    ),
}


def audit(journal: Journal, session_ids: list[str] | None = None) -> dict[str, Any]:
    """Per session and in total: refusals, invalidations, raw fallbacks, evicted obligations."""
    sessions = {}
    for session_id in session_ids or journal.sessions():
        sessions[session_id] = _audit_session(journal, session_id)
    totals = {key: sum(len(s[key]) for s in sessions.values()) for key in _SECTIONS}
    return {"sessions": sessions, "totals": totals}


_SECTIONS = (*_AUDIT_QUERIES, "evicted_obligations")


def _audit_session(journal: Journal, session_id: str) -> dict[str, list[dict[str, Any]]]:
    conn = journal.store.conn
    out: dict[str, list[dict[str, Any]]] = {}
    for key, sql in _AUDIT_QUERIES.items():
        cursor = conn.execute(sql, (session_id,))
        names = [c[0] for c in cursor.description]
        out[key] = [dict(zip(names, row, strict=True)) for row in cursor]
    out["evicted_obligations"] = evicted_obligations(journal.session(session_id).state)
    return out


def evicted_obligations(state: SessionState) -> list[dict[str, Any]]:
    """Obligations raised inside a truncated range, and which live node (if any) carries them."""
    live = state.live_nodes
    rows: list[dict[str, Any]] = []
    for c in state.open_calls.values():
        rows.append(
            _row(
                "open_call", c.call_id, c.position, [n for n in live if carries_call(n, c.call_id)]
            )
        )
    for p in state.constraints.values():
        rows.append(
            _row("constraint", p.key, p.position, [n for n in live if p.key in n.constraints])
        )
    for d in state.dispositions.values():
        by = [n for n in live if n.dispositions.get(d.key) == d.disposition]
        rows.append(_row("negative_fact", d.key, d.position, by))
    return [r for r in rows if in_spans(state.truncated, r["position"])]


def _row(kind: str, key: str, position: int, carriers: list[Node]) -> dict[str, Any]:
    return {
        "kind": kind,
        "key": key,
        "position": position,
        "carried_by": [n.node_id for n in carriers],
    }


def has_findings(report: dict[str, Any]) -> bool:
    """Whether an audit found anything an auditor must look at."""
    totals = report["totals"]
    uncarried = any(
        not row["carried_by"]
        for s in report["sessions"].values()
        for row in s["evicted_obligations"]
    )
    return uncarried or any(totals[k] for k in _AUDIT_QUERIES)
