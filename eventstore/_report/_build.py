"""Build a :class:`Timeline` from a session's events: pure, no I/O.

The events are folded with ``reducers.fold`` (the fold behind ``tierlog state
--at``) and every position is read off the folded state: an obligation sits where
the fold put it (the start of the last turn before it, found in ``turn_versions``),
a node covers what its ``Node`` covers. The events themselves only add what a state
forgets: when a call was resolved, a marker invalidated, a node replaced, a turn
retracted or the context cleared (and which summaries and markers that took along).

Large sessions stay small: turns are described by runs that share their
first truncation, first spill and withdrawal versions (each turn keeps its details
only up to ``DETAIL_TURNS``), and above ``MAX_PINS`` obligations the routine ones
(ended before any truncation, withdrawal or live summary took their position out of
the context) are counted in position bands, not drawn one by one
(``eventstore._timeline_obligations``; positions and spans: ``_timeline_spans``).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator
from typing import Final

import attrs

from eventstore._report._obligations import Carriers, Open, bands, is_routine, packed, pin
from eventstore._report._spans import (
    Axis,
    by_version,
    covered_at,
    cut,
    first_covered,
    pack_rows,
)
from eventstore._report._timeline import (
    MarkerPin,
    NodeBar,
    PointMark,
    RangeMark,
    RefusedBar,
    RoutineBand,
    Timeline,
    TurnInfo,
    TurnRun,
    WithdrawalMark,
)
from reducers import (
    CallOpened,
    CallResolved,
    Checkpointed,
    Compacted,
    CompactionRefused,
    ConstraintLifted,
    ConstraintStated,
    ContextCleared,
    Event,
    ItemDisposed,
    MarkerInvalidated,
    MarkerRefused,
    Node,
    Resumed,
    SessionState,
    TurnAppended,
    TurnRetracted,
    Violation,
    fold,
)

DETAIL_TURNS: Final = 1_000  # up to this many turns, each turn is its own mark
MAX_PINS: Final = 60  # above this many obligations, routine ones are banded
PREVIEW: Final = 200  # characters of a turn's content kept for its details
SUMMARY: Final = 4_000  # characters of a summary kept for its details
TEXT: Final = 1_000  # characters kept of a reason, a call name, a constraint text, a message
NAME: Final = 200  # characters kept of a turn's role


_OBLIGATION_EVENTS = (CallOpened, CallResolved, ConstraintStated, ConstraintLifted, ItemDisposed)


@attrs.define
class _Withdrawal:
    """A retraction or a clear (private), with the markers invalidated right after it."""

    kind: str
    first: int
    stop: int
    version: int
    reason: str
    invalidated: list[str] = attrs.field(factory=list)


@attrs.define
class _Builder:
    """Collects what the final state forgets: obligation lifecycles, refusals, resumes."""

    obligations: list[Open] = attrs.field(factory=list)
    alive: dict[tuple[str, str], Open] = attrs.field(factory=dict)
    refusals: list[tuple[int, CompactionRefused]] = attrs.field(factory=list)
    marker_refusals: dict[str, MarkerRefused] = attrs.field(factory=dict)
    invalidated: dict[str, int] = attrs.field(factory=dict)
    replaced: dict[str, int] = attrs.field(factory=dict)
    resumes: list[tuple[int, Resumed]] = attrs.field(factory=list)
    withdrawals: list[_Withdrawal] = attrs.field(factory=list)
    info: list[TurnInfo] = attrs.field(factory=list)
    types: list[str] = attrs.field(factory=list)
    cause: _Withdrawal | None = None  # the withdrawal whose invalidations may follow

    def record(self, event: Event) -> None:
        """Note the next event of the session."""
        self.types.append(type(event).__name__)
        version = len(self.types)
        cause, self.cause = self.cause, None
        if isinstance(event, TurnAppended):
            self._turn(event)
        elif isinstance(event, _OBLIGATION_EVENTS):
            self._obligation(version, event)
        elif isinstance(event, CompactionRefused):
            self.refusals.append((version, event))
        elif isinstance(event, MarkerRefused):
            self.marker_refusals[event.marker_id] = event
        elif isinstance(event, MarkerInvalidated):
            self.invalidated.setdefault(event.marker_id, version)
            if cause is not None:  # decided with the withdrawal, in its transaction
                cause.invalidated.append(event.marker_id)
                self.cause = cause
        elif isinstance(event, Compacted):
            for old in event.replaces:
                self.replaced.setdefault(old, version)
        elif isinstance(event, Resumed):
            self.resumes.append((version, event))
        elif isinstance(event, TurnRetracted):
            self._withdraw("retraction", event.index, event.index + 1, version, event.reason)
        elif isinstance(event, ContextCleared):
            self._withdraw("clear", 0, event.before, version, event.reason)

    def _withdraw(self, kind: str, first: int, stop: int, version: int, reason: str) -> None:
        reason = cut(reason, TEXT)
        self.cause = _Withdrawal(kind=kind, first=first, stop=stop, version=version, reason=reason)
        self.withdrawals.append(self.cause)

    def _turn(self, event: TurnAppended) -> None:
        """Keep a turn's details while the session is small enough to show them."""
        if len(self.info) <= DETAIL_TURNS:
            self.info.append(
                TurnInfo(
                    role=cut(event.role, NAME),
                    tokens=event.tokens,
                    preview=cut(event.content, PREVIEW),
                )
            )

    def _obligation(self, version: int, event: Event) -> None:
        if isinstance(event, CallOpened):
            self._raise(version, "open_call", event.call_id, f"{event.kind} {event.name}")
        elif isinstance(event, CallResolved):
            self._end("open_call", event.call_id, version, f"resolved: {event.outcome}")
        elif isinstance(event, ConstraintStated):
            self._end("constraint", event.key, version, "stated again")
            self._raise(version, "constraint", event.key, event.text)
        elif isinstance(event, ConstraintLifted):
            self._end("constraint", event.key, version, "lifted")
        elif isinstance(event, ItemDisposed):
            self._end("negative_fact", event.key, version, f"superseded ({event.disposition})")
            detail = f"{event.disposition}: {event.reason}"
            self._raise(version, "negative_fact", event.key, detail, event.disposition)

    def _raise(self, version: int, kind: str, key: str, detail: str, disposition: str = "") -> None:
        detail = cut(detail, TEXT)
        item = Open(kind=kind, key=key, detail=detail, version=version, disposition=disposition)
        self.obligations.append(item)
        self.alive[kind, key] = item

    def _end(self, kind: str, key: str, version: int, how: str) -> None:
        item = self.alive.pop((kind, key), None)
        if item is not None:
            item.ended_at, item.ended = version, cut(how, TEXT)


_CHUNK = 8_192  # events folded at a time: the fold is linear, this only bounds memory


def build(session_id: str, events: Iterable[Event]) -> Timeline:
    """The timeline of a session from its events (version 1 first)."""
    b = _Builder()
    state = SessionState()
    chunk: list[Event] = []
    for event in events:
        b.record(event)
        chunk.append(event)
        if len(chunk) == _CHUNK:
            state = fold(chunk, state)
            chunk.clear()
    return _finish(session_id, fold(chunk, state), b)


def _finish(session_id: str, state: SessionState, b: _Builder) -> Timeline:
    axis = Axis(state)
    carriers = Carriers(state, _withdrawn_positions(axis, b.withdrawals))
    cleared = _cleared(state, b)
    obligations = [pin(axis, o, carriers) for o in b.obligations]
    routine: list[RoutineBand] = []
    if len(obligations) > MAX_PINS:
        born = {n.node_id: n.version for n in state.nodes.values()}
        routine = bands(state, [o for o in obligations if is_routine(o, born)])
        obligations = [o for o in obligations if not is_routine(o, born)]
    return Timeline(
        session_id=session_id,
        config=state.config,
        unit=state.unit,
        version=state.version,
        tok_starts=tuple(state.tok_starts),
        turn_versions=tuple(state.turn_versions),
        runs=tuple(_runs(state, b.withdrawals)),
        turn_info=tuple(b.info) if state.turns <= DETAIL_TURNS else (),
        nodes=_nodes(state, b, cleared),
        refusals=_refusals(b),
        markers=tuple(_markers(state, b)),
        obligations=tuple(packed(obligations)),
        routine=tuple(routine),
        ranges=tuple(_ranges(state)),
        points=tuple(_points(state, b)),
        event_types=tuple(b.types),
        withdrawals=tuple(_withdrawals(axis, b.withdrawals, cleared)),
    )


def _messages(violations: tuple[Violation, ...]) -> tuple[Violation, ...]:
    return tuple(attrs.evolve(v, message=cut(v.message, TEXT)) for v in violations)


def _cleared(state: SessionState, b: _Builder) -> dict[str, int]:
    """node_id -> the clear that took it out of the context: the first one while it was
    live (committed before it, not yet replaced)."""
    clears = [w.version for w in b.withdrawals if w.kind == "clear"]
    out = {}
    for n in state.nodes.values():
        i = bisect.bisect_right(clears, n.version)
        replaced = b.replaced.get(n.node_id)
        if i < len(clears) and (replaced is None or replaced > clears[i]):
            out[n.node_id] = clears[i]
    return out


def _nodes(state: SessionState, b: _Builder, cleared: dict[str, int]) -> tuple[NodeBar, ...]:
    out = []
    for tier in (1, 2):
        mine = sorted(
            (n for n in state.nodes.values() if n.tier == tier),
            key=lambda n: (n.covers_lo, n.version),
        )
        rows = pack_rows((n.covers_lo, n.covers_hi) for n in mine)
        out += [_bar(n, b, row, cleared) for n, row in zip(mine, rows, strict=True)]
    return tuple(sorted(out, key=lambda n: n.version))


def _bar(n: Node, b: _Builder, row: int, cleared: dict[str, int]) -> NodeBar:
    return NodeBar(
        node_id=n.node_id,
        tier=n.tier,
        lo=n.covers_lo,
        hi=n.covers_hi,
        input_lo=n.input_lo,
        input_hi=n.input_hi,
        tail_start=n.tail_start,
        summary=cut(n.summary, SUMMARY),
        tokens=n.tokens,
        version=n.version,
        replaced_at=b.replaced.get(n.node_id),
        replaced_by=n.replaced_by,
        calls=tuple(sorted({*n.resolved_ids, *n.unresolved_ids})),
        constraints=n.constraints,
        dispositions=dict(n.dispositions),
        required_calls=n.required_calls,
        required_constraints=n.required_constraints,
        required_dispositions=dict(n.required_dispositions),
        row=row,
        cleared_at=cleared.get(n.node_id),
    )


def _refusals(b: _Builder) -> tuple[RefusedBar, ...]:
    out = []
    for tier in (1, 2):
        mine = [(v, r) for v, r in b.refusals if r.proposal.tier == tier]
        spans = [(r.proposal.covers_lo, r.proposal.covers_hi) for _, r in mine]
        order = sorted(range(len(mine)), key=lambda i: spans[i])
        rows = dict(zip(order, pack_rows(spans[i] for i in order), strict=True))
        for i, (version, r) in enumerate(mine):
            p = r.proposal
            out.append(
                RefusedBar(
                    node_id=p.node_id,
                    tier=p.tier,
                    lo=p.covers_lo,
                    hi=p.covers_hi,
                    input_lo=p.input_lo,
                    input_hi=p.input_hi,
                    tail_start=p.tail_start,
                    summary=cut(p.summary, SUMMARY),
                    version=version,
                    action=r.action,
                    violations=_messages(r.violations),
                    row=rows[i],
                )
            )
    return tuple(sorted(out, key=lambda r: r.version))


def _markers(state: SessionState, b: _Builder) -> Iterator[MarkerPin]:
    for m in sorted(state.markers.values(), key=lambda m: m.version):
        node = state.nodes.get(m.node_id)
        refusal = b.marker_refusals.get(m.marker_id)
        invalidated = refusal is None and not m.valid
        yield MarkerPin(
            marker_id=m.marker_id,
            node_id=m.node_id,
            tier_depth=m.tier_depth,
            position=node.covers_hi if node else 0,
            version=m.version,
            refused=refusal is not None,
            violations=_messages(refusal.violations) if refusal else (),
            invalidated_at=b.invalidated.get(m.marker_id) if invalidated else None,
            rule=m.invalidated_rule,
            reason=None if m.invalidated_reason is None else cut(m.invalidated_reason, TEXT),
        )


def _runs(state: SessionState, withdrawals: list[_Withdrawal]) -> Iterator[TurnRun]:
    """Turns in runs that share their first truncation, spill and withdrawal versions."""
    idx = state.turn_index
    cuts = first_covered((idx(t.lo), idx(t.hi), t.version) for t in state.truncations)
    spills = first_covered((idx(s.lo), idx(s.hi), s.version) for s in state.spills)
    gone = first_covered((w.first, w.stop, w.version) for w in withdrawals if w.first < w.stop)
    pieces = (*cuts, *spills, *gone)
    edges = sorted({0, state.turns, *(p for lo, hi, _ in pieces for p in (lo, hi))})
    for lo, hi in itertools.pairwise(edges):
        if lo < hi <= state.turns:
            yield TurnRun(
                lo=lo,
                hi=hi,
                truncated_at=covered_at(cuts, lo),
                spilled_at=covered_at(spills, lo),
                withdrawn_at=covered_at(gone, lo),
            )


def _withdrawn_positions(axis: Axis, withdrawals: list[_Withdrawal]) -> list[tuple[int, int, int]]:
    """Each withdrawal's non-empty position range (``SessionState.withdrawn_positions``)."""
    spans = (
        (axis.position_of_turn(w.first), axis.position_of_turn(w.stop), w.version)
        for w in withdrawals
    )
    return [(lo, hi, version) for lo, hi, version in spans if lo < hi]


def _withdrawals(
    axis: Axis, withdrawals: list[_Withdrawal], cleared: dict[str, int]
) -> Iterator[WithdrawalMark]:
    pieces = by_version(first_covered(_withdrawn_positions(axis, withdrawals)))
    for w in withdrawals:
        yield WithdrawalMark(
            kind=w.kind,
            first=w.first,
            stop=w.stop,
            lo=axis.position_of_turn(w.first),
            hi=axis.position_of_turn(w.stop),
            version=w.version,
            reason=w.reason,
            pieces=pieces.get(w.version, ()),
            nodes=tuple(k for k, at in cleared.items() if at == w.version),
            invalidated=tuple(w.invalidated),
        )


def _ranges(state: SessionState) -> Iterator[RangeMark]:
    cuts = by_version(first_covered((t.lo, t.hi, t.version) for t in state.truncations))
    for t in state.truncations:
        yield RangeMark(
            kind="truncation",
            lo=t.lo,
            hi=t.hi,
            version=t.version,
            detail=cut(t.reason, TEXT),
            pieces=cuts.get(t.version, ()),
        )
    spills = by_version(first_covered((s.lo, s.hi, s.version) for s in state.spills))
    for s in state.spills:
        yield RangeMark(
            kind="spill",
            lo=s.lo,
            hi=s.hi,
            version=s.version,
            detail=f"{s.handle} ({s.bytes:,} bytes, sha256 {s.sha256[:16]}…)",
            pieces=spills.get(s.version, ()),
        )


def _points(state: SessionState, b: _Builder) -> Iterator[PointMark]:
    versions = [v for v, t in enumerate(b.types, 1) if t == Checkpointed.__name__]
    for version, at in zip(versions, state.checkpoints, strict=True):
        yield PointMark(kind="checkpoint", position=at, version=version, marker_id="", detail="")
    for version, r in b.resumes:
        marker = state.markers.get(r.marker_id)
        node = state.nodes.get(marker.node_id) if marker else None
        at = r.checkpoint_at if r.checkpoint_at is not None else (node.covers_hi if node else 0)
        yield PointMark(
            kind=f"resume_{r.source}",
            position=at,
            version=version,
            marker_id=r.marker_id,
            detail=cut(r.reason, TEXT),
        )
