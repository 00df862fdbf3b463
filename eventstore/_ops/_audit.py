"""``verify`` and ``audit``: what a debugger and an auditor ask of a journal."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs

from eventstore._errors import ChainBroken
from eventstore._journal import Journal
from eventstore._ops._replay import divergences
from eventstore._ops._reviews import Review, review
from eventstore._store import (
    ChainWalk,
    CompactionRefusalRow,
    FallbackRow,
    InvalidationRow,
    MarkerRefusalRow,
    NoteRow,
    from_rows,
    whole_rows,
)
from invariants import carries_call, carries_constraint, carries_fact, owed
from reducers import Node, SessionState, Told, fold, in_spans


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
    journal: Journal,
    session_ids: list[str] | None = None,
    progress: Progress | None = None,
    *,
    jobs: int = 1,
    reopen: Callable[[], Journal] | None = None,
) -> list[Finding]:
    """Integrity check, hash chains, spill files, snapshots, and every decision re-derived.

    ``jobs`` > 1 with ``reopen`` (a picklable function that opens this journal again,
    read-only): the sessions are verified by that many worker processes; the findings
    are the same, in the same order."""
    ids = session_ids or journal.sessions()
    if jobs > 1 and reopen is not None and len(ids) > 1:
        from eventstore._ops._jobs import verify_in_workers  # processes only when asked

        integrity = journal.recorder.integrity_problems  # here, while the workers start
        problems, sessions = verify_in_workers(reopen, verify_session, ids, jobs, integrity)
    else:  # each session's findings found as they are handed on, after its progress
        problems = journal.recorder.integrity_problems()
        sessions = ((sid, verify_session(journal, sid)) for sid in ids)
    found = [
        Finding(check="integrity", session_id=None, version=None, problem=problem)
        for problem in problems
    ]
    for session_id, findings in sessions:
        if progress:
            progress(session_id)
        found += findings
    if session_ids is None:
        found += orphan_spills(journal)
        found += [
            Finding(check="view", session_id=None, version=None, problem=note, fatal=False)
            for note in journal.recorder.view_notes()
        ]
    return found


def verify_session(journal: Journal, session_id: str) -> Iterator[Finding]:
    """One session's findings, in one pass: walk the chain, and replay what it yields
    through the decisions (spill bytes checked on the way); then the snapshot's."""
    recorder = journal.recorder
    walk = ChainWalk(session_id, whole_rows(recorder, session_id))
    snap = journal.snapshots.check(session_id)
    compare = (snap.version, snap.sha256) if snap and snap.problem is None else None
    for d in divergences(session_id, walk, journal.effects(session_id), snapshot=compare):
        yield Finding(check=d.check, session_id=session_id, version=d.version, problem=d.problem)
    if walk.problem is not None:
        p = walk.problem
        yield Finding(check="chain", session_id=session_id, version=p.version, problem=p.problem)
    if snap is not None and snap.problem is not None:
        yield _snapshot_finding(journal, session_id, snap.version, snap.problem)


def _snapshot_finding(journal: Journal, session_id: str, version: int, problem: str) -> Finding:
    head = journal.recorder.head(session_id).version
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
            problem=f"{name} in {journal.spills.location} is used by no spill event"
            f" ({journal.spills.orphan_hint})",
            fatal=False,
        )
        for name in journal.spills.orphans(journal.recorder.spill_handles())
    ]


def clean_spills(journal: Journal) -> list[Finding]:
    """Remove the orphan spill files, holding the write lock so that no writer is between
    writing a spill and committing it; returns what was removed, as notes."""
    with journal.recorder.transaction():
        names = journal.spills.orphans(journal.recorder.spill_handles())
        journal.spills.remove(names)
    return [
        Finding(
            check="orphan",
            session_id=None,
            version=None,
            problem=f"removed {name} from {journal.spills.location}",
            fatal=False,
        )
        for name in names
    ]


@attrs.frozen(kw_only=True)
class EvictedObligation:
    """An obligation raised inside a truncated range, the live nodes that carry it, and
    the turn of the resident re-tell that states it (``Session.retell``), if any."""

    kind: str
    key: str
    position: int
    carried_by: tuple[str, ...]
    retold_at: int | None = None


@attrs.frozen(kw_only=True)
class SessionAudit:
    """What an auditor looks at in one session."""

    compaction_refusals: tuple[CompactionRefusalRow, ...]
    marker_refusals: tuple[MarkerRefusalRow, ...]
    marker_invalidations: tuple[InvalidationRow, ...]
    raw_fallbacks: tuple[FallbackRow, ...]
    evicted_obligations: tuple[EvictedObligation, ...]
    # what tierlog guessed, skipped or fell back on reading someone else's data
    notes: tuple[NoteRow, ...] = ()
    # ingested transcripts: each compaction and what its summary evidences. Not a
    # finding and not totalled: what it does not evidence is a marker refusal already.
    compaction_reviews: tuple[Review, ...] = attrs.field(default=(), metadata={"total": False})
    # where the session's hash chain breaks (the sections come from its rows as stored,
    # and no integration reviews it: a review reads the session, which refuses to)
    chain: str | None = attrs.field(default=None, metadata={"total": False})

    @property
    def chain_notes(self) -> tuple[NoteRow, ...]:
        """The notes saying the source's chain was not read whole (or only by a guess)."""
        return tuple(n for n in self.notes if n.kind in CHAIN_KINDS)

    @property
    def findings(self) -> bool:
        """Whether anything here needs a person: a refusal, an invalidation, a
        fallback, a note, or an evicted obligation no live node carries and no re-tell
        states."""
        recorded = (
            self.compaction_refusals,
            self.marker_refusals,
            self.marker_invalidations,
            self.raw_fallbacks,
            self.notes,
        )
        lost = (o for o in self.evicted_obligations if not o.carried_by and o.retold_at is None)
        return any(recorded) or any(lost) or self.chain is not None


CHAIN_KINDS = frozenset({"chain_broken", "chain_fallback", "off_chain"})
SECTIONS = tuple(a.name for a in attrs.fields(SessionAudit) if a.metadata.get("total", True))


@attrs.frozen(kw_only=True)
class AuditReport:
    """Per session, and in total per section."""

    sessions: dict[str, SessionAudit]
    totals: dict[str, int]

    @property
    def findings(self) -> bool:
        """Whether any session has a finding."""
        return any(s.findings for s in self.sessions.values())


def audit(journal: Journal, session_ids: list[str] | None = None) -> AuditReport:
    """Per session and in total: refusals, invalidations, raw fallbacks, evicted obligations."""
    sessions = {sid: _audit_session(journal, sid) for sid in session_ids or journal.sessions()}
    totals = {key: sum(len(getattr(s, key)) for s in sessions.values()) for key in SECTIONS}
    return AuditReport(sessions=sessions, totals=totals)


def _audit_session(journal: Journal, session_id: str) -> SessionAudit:
    rows = journal.recorder.audit_rows(session_id)
    state, chain = state_as_stored(journal, session_id)
    chain = chain or _chain_break(journal, session_id)
    return SessionAudit(
        chain=chain,
        compaction_refusals=rows.compaction_refusals,
        marker_refusals=rows.marker_refusals,
        marker_invalidations=rows.marker_invalidations,
        raw_fallbacks=rows.raw_fallbacks,
        notes=rows.notes,
        evicted_obligations=evicted_obligations(state),
        compaction_reviews=review(journal, session_id) if chain is None else (),
    )


def state_as_stored(journal: Journal, session_id: str) -> tuple[SessionState, str | None]:
    """The session's state, and ``None``; where its hash chain breaks, the state its
    rows fold to as stored, and what breaks (a reader that shows the session anyway)."""
    try:
        return journal.session(session_id).state, None
    except ChainBroken as exc:
        rows = journal.recorder.read_payloads(session_id)
        return fold(from_rows(rows)), f"v{exc.version}: {exc.problem}"


def _chain_break(journal: Journal, session_id: str) -> str | None:
    """Where the session's hash chain breaks, every row walked: the sections show rows
    as stored, and the state may start from a snapshot past an edited one."""
    walk = ChainWalk(session_id, journal.recorder.read(session_id))
    for _ in walk:
        pass
    return None if walk.problem is None else f"v{walk.problem.version}: {walk.problem.problem}"


def evicted_obligations(state: SessionState) -> tuple[EvictedObligation, ...]:
    """Obligations raised inside a truncated range, and which live node (if any) carries them."""
    live = state.live_nodes
    rows: list[EvictedObligation] = []
    for c in state.open_calls.values():
        by = [n for n in live if carries_call(n, c.call_id)]
        rows.append(_row("open_call", c.call_id, c.position, by))
    for p in state.constraints.values():
        rows.append(
            _row("constraint", p.key, p.position, [n for n in live if carries_constraint(n, p)])
        )
    for d in state.dispositions.values():
        by = [n for n in live if carries_fact(n, d)]
        rows.append(_row("negative_fact", d.key, d.position, by))
    lacking = {(o.kind, o.key) for o in owed(state)}
    return tuple(_retold(state, r, lacking) for r in rows if in_spans(state.truncated, r.position))


def _retold(
    state: SessionState, row: EvictedObligation, lacking: set[tuple[str, str]]
) -> EvictedObligation:
    """``row`` with the turn of the re-tell that holds it, when nothing else does."""
    told = state.retold.get(Told.slot(row.kind, row.key))
    if row.carried_by or told is None or (row.kind, row.key) in lacking:
        return row
    return attrs.evolve(row, retold_at=told.turn)


def _row(kind: str, key: str, position: int, carriers: list[Node]) -> EvictedObligation:
    return EvictedObligation(
        kind=kind, key=key, position=position, carried_by=tuple(n.node_id for n in carriers)
    )
