"""A session as a timeline of typed marks, each with the versions at which it changed.

Pure values, no I/O. ``eventstore._timeline_build.build`` makes a :class:`Timeline`
by folding the session's events with ``reducers.fold`` (the fold behind ``tierlog
state --at``) and reading every mark off the folded states. The state at any
version ``v`` is then a function of the marks' versions alone: :func:`view_at`
computes it here, and the report's script computes the same thing in the browser,
so a version slider needs no further fold.

Withdrawals (``TurnRetracted``, ``ContextCleared``) are marks like the others: a
turn run and an obligation know the version that first took them out of the
working context, a summary node the version of the clear that took it out.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from reducers import SessionConfig, Violation


@attrs.frozen(kw_only=True)
class TurnRun:
    """Turns ``[lo, hi)`` (indices) first truncated, spilled and withdrawn at the same versions."""

    lo: int
    hi: int
    truncated_at: int | None
    spilled_at: int | None
    withdrawn_at: int | None


@attrs.frozen(kw_only=True)
class TurnInfo:
    """One turn's details, kept for sessions of at most ``DETAIL_TURNS`` turns."""

    role: str
    tokens: int
    preview: str


@attrs.frozen(kw_only=True)
class NodeBar:
    """A summary node over ``[lo, hi)``, live from ``version`` until ``replaced_at`` or,
    for a node a ``ContextCleared`` took out of the context, ``cleared_at``."""

    node_id: str
    tier: int
    lo: int
    hi: int
    input_lo: int
    input_hi: int
    tail_start: int
    summary: str
    tokens: int
    version: int
    replaced_at: int | None
    replaced_by: str | None
    calls: tuple[str, ...]
    constraints: tuple[str, ...]
    dispositions: Mapping[str, str]
    required_calls: tuple[str, ...]
    required_constraints: tuple[str, ...]
    required_dispositions: Mapping[str, str]
    row: int
    cleared_at: int | None


@attrs.frozen(kw_only=True)
class RefusedBar:
    """A compaction the invariants refused at ``version``: its proposal and its rules."""

    node_id: str
    tier: int
    lo: int
    hi: int
    input_lo: int
    input_hi: int
    tail_start: int
    summary: str
    version: int
    action: str
    violations: tuple[Violation, ...]
    row: int


@attrs.frozen(kw_only=True)
class MarkerPin:
    """A marker at its node's seam: emitted (valid until ``invalidated_at``) or refused."""

    marker_id: str
    node_id: str
    tier_depth: int
    position: int
    version: int
    refused: bool
    violations: tuple[Violation, ...]
    invalidated_at: int | None
    rule: str | None
    reason: str | None


@attrs.frozen(kw_only=True)
class ObligationPin:
    """An open call, constraint or negative fact, from where it was raised to its end.

    ``carried_by``: the nodes whose summary carries it; ``covered_by``: the nodes
    whose range holds its position; ``fell_out_at``: the version of the first
    truncation that dropped its position from the context; ``withdrawn_at``: the
    version of the first retraction or clear that took its position out of it.
    """

    kind: str
    key: str
    detail: str
    position: int
    extent: int
    version: int
    ended_at: int | None
    ended: str
    carried_by: tuple[str, ...]
    covered_by: tuple[str, ...]
    fell_out_at: int | None
    row: int
    withdrawn_at: int | None


@attrs.frozen(kw_only=True)
class RoutineBand:
    """Routine obligations of one kind raised in ``[lo, hi)``: keys, raise and end versions."""

    kind: str
    lo: int
    hi: int
    raised: tuple[int, ...]
    ended: tuple[int, ...]
    keys: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class RangeMark:
    """A truncation or a spill of ``[lo, hi)`` at ``version``; ``pieces``: the parts of
    it no earlier range of its kind had covered (drawn, so that ranges never overlap)."""

    kind: str
    lo: int
    hi: int
    version: int
    detail: str
    pieces: tuple[tuple[int, int], ...]


@attrs.frozen(kw_only=True)
class WithdrawalMark:
    """A ``TurnRetracted`` (kind ``retraction``) or a ``ContextCleared`` (``clear``) at
    ``version``: turns ``[first, stop)``, positions ``[lo, hi)``.

    ``pieces``: the positions no earlier withdrawal had taken (drawn, so that they
    never overlap); ``nodes``: the live summaries a clear took out of the context;
    ``invalidated``: the markers the withdrawal broke (their ``MarkerInvalidated``
    follow it in its transaction).
    """

    kind: str
    first: int
    stop: int
    lo: int
    hi: int
    version: int
    reason: str
    pieces: tuple[tuple[int, int], ...]
    nodes: tuple[str, ...]
    invalidated: tuple[str, ...]


@attrs.frozen(kw_only=True)
class PointMark:
    """A checkpoint or a resume at ``position``."""

    kind: str
    position: int
    version: int
    marker_id: str
    detail: str


@attrs.frozen(kw_only=True)
class Timeline:
    """Everything the report draws for one session, up to ``version``."""

    session_id: str
    config: SessionConfig | None
    unit: str
    version: int
    tok_starts: tuple[int, ...]
    turn_versions: tuple[int, ...]
    runs: tuple[TurnRun, ...]
    turn_info: tuple[TurnInfo, ...]
    nodes: tuple[NodeBar, ...]
    refusals: tuple[RefusedBar, ...]
    markers: tuple[MarkerPin, ...]
    obligations: tuple[ObligationPin, ...]
    routine: tuple[RoutineBand, ...]
    ranges: tuple[RangeMark, ...]
    points: tuple[PointMark, ...]
    event_types: tuple[str, ...]
    withdrawals: tuple[WithdrawalMark, ...]

    @property
    def turns(self) -> int:
        """Turns appended by ``version``."""
        return len(self.turn_versions)


# -- the state at one version -----------------------------------------------------------
@attrs.frozen(kw_only=True)
class View:
    """What the timeline shows at one version: the same answers ``state --at`` gives."""

    version: int
    turn_status: tuple[str, ...]  # resident | summarised | truncated | spilled | withdrawn
    tokens_total: int
    occupancy: int
    depth: int
    tail_start: int
    nodes: Mapping[str, str]  # node_id -> live | replaced | cleared
    refusals: tuple[int, ...]  # versions of the compaction refusals so far
    markers: Mapping[str, str]  # marker_id -> valid | refused | invalidated
    obligations: Mapping[tuple[str, str], str]  # (kind, key) -> open | carried | dropped
    routine_open: int  # banded obligations still open

    @property
    def turns(self) -> int:
        """Turns appended by this version."""
        return len(self.turn_status)


def _by(at: int | None, v: int) -> bool:
    """Whether a change recorded at version ``at`` (None: never) has happened by ``v``."""
    return at is not None and at <= v


def _node(node: NodeBar, v: int) -> str:
    """live, replaced or cleared at ``v`` (a node is known from its ``version`` on)."""
    if _by(node.replaced_at, v):
        return "replaced"
    return "cleared" if _by(node.cleared_at, v) else "live"


def _turn_status(t: Timeline, v: int, live: list[NodeBar]) -> tuple[str, ...]:
    """Truncated (or spilled) first, then withdrawn, then summarised, else resident."""
    n = sum(1 for tv in t.turn_versions if tv <= v)
    status = ["resident"] * n
    for node in live:
        lo, hi = _index(t, node.lo), _index(t, node.hi)
        status[lo : min(hi, n)] = ["summarised"] * max(0, min(hi, n) - lo)
    for run in t.runs:
        if _by(run.truncated_at, v):
            now = "spilled" if _by(run.spilled_at, v) else "truncated"
        elif _by(run.withdrawn_at, v):
            now = "withdrawn"
        else:
            continue
        status[run.lo : min(run.hi, n)] = [now] * max(0, min(run.hi, n) - run.lo)
    return tuple(status)


def _index(t: Timeline, position: int) -> int:
    """The turn starting at ``position`` (a turn boundary)."""
    if t.unit == "turns":
        return position
    lo, hi = 0, len(t.tok_starts) - 1
    while lo < hi:  # the first start >= position
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if t.tok_starts[mid] < position else (lo, mid)
    return lo


def _obligation(o: ObligationPin, v: int, live: set[str]) -> str:
    if any(n in live for n in o.carried_by):
        return "carried"
    evicted = (
        _by(o.fell_out_at, v) or _by(o.withdrawn_at, v) or any(n in live for n in o.covered_by)
    )
    return "dropped" if evicted else "open"


def view_at(t: Timeline, v: int) -> View:
    """The timeline at version ``v`` (0 <= v <= t.version)."""
    if not 0 <= v <= t.version:
        raise ValueError(f"version {v} is outside 0..{t.version}")
    live = [n for n in t.nodes if n.version <= v and _node(n, v) == "live"]
    live_ids = {n.node_id for n in live}
    status = _turn_status(t, v, live)
    sizes = [t.tok_starts[i + 1] - t.tok_starts[i] for i in range(len(status))]
    kept = sum(size for size, s in zip(sizes, status, strict=True) if s == "resident")
    return View(
        version=v,
        turn_status=status,
        tokens_total=sum(sizes),
        occupancy=kept + sum(n.tokens for n in live),
        depth=max((n.tier for n in live), default=0),
        tail_start=max((n.hi for n in live), default=0),
        nodes={n.node_id: _node(n, v) for n in t.nodes if n.version <= v},
        refusals=tuple(r.version for r in t.refusals if r.version <= v),
        markers={m.marker_id: _marker(m, v) for m in t.markers if m.version <= v},
        obligations={
            (o.kind, o.key): _obligation(o, v, live_ids)
            for o in t.obligations
            if o.version <= v and (o.ended_at is None or o.ended_at > v)
        },
        routine_open=sum(
            1
            for band in t.routine
            for raised, ended in zip(band.raised, band.ended, strict=True)
            if raised <= v < ended
        ),
    )


def _marker(m: MarkerPin, v: int) -> str:
    if m.refused:
        return "refused"
    return "invalidated" if _by(m.invalidated_at, v) else "valid"
