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
the context) are counted in position bands, not drawn one by one.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator
from typing import Final

import attrs

from eventstore._timeline import (
    MarkerPin,
    NodeBar,
    ObligationPin,
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
    fold,
    merge_spans,
)

DETAIL_TURNS: Final = 1_000  # up to this many turns, each turn is its own mark
MAX_PINS: Final = 60  # above this many obligations, routine ones are banded
PREVIEW: Final = 200  # characters of a turn's content kept for its details
SUMMARY: Final = 4_000  # characters of a summary kept for its details
BANDS: Final = 200  # position bands for routine obligations


_OBLIGATION_EVENTS = (CallOpened, CallResolved, ConstraintStated, ConstraintLifted, ItemDisposed)


@attrs.define
class _Open:
    """An obligation being built (private); positions are filled in from the fold."""

    kind: str
    key: str
    detail: str
    version: int
    disposition: str = ""
    ended_at: int | None = None
    ended: str = ""


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

    obligations: list[_Open] = attrs.field(factory=list)
    alive: dict[tuple[str, str], _Open] = attrs.field(factory=dict)
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
        self.cause = _Withdrawal(kind=kind, first=first, stop=stop, version=version, reason=reason)
        self.withdrawals.append(self.cause)

    def _turn(self, event: TurnAppended) -> None:
        """Keep a turn's details while the session is small enough to show them."""
        if len(self.info) <= DETAIL_TURNS:
            self.info.append(
                TurnInfo(role=event.role, tokens=event.tokens, preview=_cut(event.content, PREVIEW))
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
        item = _Open(kind=kind, key=key, detail=detail, version=version, disposition=disposition)
        self.obligations.append(item)
        self.alive[kind, key] = item

    def _end(self, kind: str, key: str, version: int, how: str) -> None:
        item = self.alive.pop((kind, key), None)
        if item is not None:
            item.ended_at, item.ended = version, how


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


class Axis:
    """A folded state's turn boundaries as plain lists, for many position look-ups."""

    def __init__(self, state: SessionState) -> None:
        self.by_turn = state.unit == "turns"
        self.versions = list(state.turn_versions)
        self.starts = list(state.tok_starts)
        self.turns = state.turns
        self.end = state.end

    def position_of_turn(self, index: int) -> int:
        """Turn ``index``'s start (``SessionState.position_of_turn``)."""
        return index if self.by_turn else self.starts[index]

    def turn_index(self, position: int) -> int:
        """The turn starting at ``position`` (``SessionState.turn_index``)."""
        return position if self.by_turn else bisect.bisect_left(self.starts, position)

    def position_at(self, version: int) -> int:
        """Where the fold put an obligation raised by the ``version``-th event: the start
        of the last turn appended before it (``SessionState.last_position`` then)."""
        before = bisect.bisect_left(self.versions, version)  # turns appended before it
        return self.position_of_turn(before - 1) if before else 0

    def turn_end(self, position: int) -> int:
        """The end of the turn starting at ``position`` (``position`` with no turns)."""
        if not self.turns:
            return position
        index = min(self.turn_index(position), self.turns - 1)
        return self.position_of_turn(index + 1) if index + 1 < self.turns else self.end


def _finish(session_id: str, state: SessionState, b: _Builder) -> Timeline:
    axis = Axis(state)
    carriers = _Carriers(state, _withdrawn_positions(axis, b.withdrawals))
    cleared = _cleared(state, b)
    obligations = [_pin(axis, o, carriers) for o in b.obligations]
    routine: list[RoutineBand] = []
    if len(obligations) > MAX_PINS:
        born = {n.node_id: n.version for n in state.nodes.values()}
        routine = _bands(state, [o for o in obligations if _is_routine(o, born)])
        obligations = [o for o in obligations if not _is_routine(o, born)]
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
        obligations=tuple(_packed(obligations)),
        routine=tuple(routine),
        ranges=tuple(_ranges(state)),
        points=tuple(_points(state, b)),
        event_types=tuple(b.types),
        withdrawals=tuple(_withdrawals(axis, b.withdrawals, cleared)),
    )


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more chars)"


def _rows(spans: Iterable[tuple[int, int]]) -> list[int]:
    """Greedy interval packing: the row of each span (in the order given, sorted by start)."""
    ends: list[int] = []
    out = []
    for lo, hi in spans:
        row = next((i for i, end in enumerate(ends) if end <= lo), len(ends))
        if row == len(ends):
            ends.append(hi)
        ends[row] = max(hi, lo + 1)
        out.append(row)
    return out


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
        rows = _rows((n.covers_lo, n.covers_hi) for n in mine)
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
        summary=_cut(n.summary, SUMMARY),
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
        rows = dict(zip(order, _rows(spans[i] for i in order), strict=True))
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
                    summary=_cut(p.summary, SUMMARY),
                    version=version,
                    action=r.action,
                    violations=r.violations,
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
            violations=refusal.violations if refusal else (),
            invalidated_at=b.invalidated.get(m.marker_id) if invalidated else None,
            rule=m.invalidated_rule,
            reason=m.invalidated_reason,
        )


class _Carriers:
    """Which nodes carry, and which nodes cover, an obligation: indexed once."""

    def __init__(self, state: SessionState, withdrawn: list[tuple[int, int, int]]) -> None:
        self.by_key: dict[tuple[str, str], list[str]] = {}
        for n in sorted(state.nodes.values(), key=lambda n: n.version):
            for call in sorted({*n.resolved_ids, *n.unresolved_ids}):  # invariants.carries_call
                self.by_key.setdefault(("open_call", call), []).append(n.node_id)
            for key in n.constraints:
                self.by_key.setdefault(("constraint", key), []).append(n.node_id)
            for key, disposition in n.dispositions.items():
                self.by_key.setdefault((f"negative_fact:{disposition}", key), []).append(n.node_id)
        self.spans = sorted(
            (n.covers_lo, n.covers_hi, n.version, n.node_id) for n in state.nodes.values()
        )
        self.cuts = first_covered((t.lo, t.hi, t.version) for t in state.truncations)
        self.withdrawn = first_covered(withdrawn)

    def carried(self, o: _Open) -> tuple[str, ...]:
        kind = f"negative_fact:{o.disposition}" if o.kind == "negative_fact" else o.kind
        return tuple(self.by_key.get((kind, o.key), ()))

    def covered(self, position: int) -> tuple[str, ...]:
        stop = bisect.bisect_right(self.spans, (position, float("inf")))
        found = [s for s in self.spans[:stop] if s[1] > position]
        return tuple(node_id for *_, node_id in sorted(found, key=lambda s: s[2]))


def _pin(axis: Axis, o: _Open, carriers: _Carriers) -> ObligationPin:
    position = axis.position_at(o.version)
    cut = _at(carriers.cuts, position)
    withdrawn = _at(carriers.withdrawn, position)
    ended = None if o.ended_at is None else axis.position_at(o.ended_at)
    stop = axis.end if ended is None else axis.turn_end(ended)
    return ObligationPin(
        kind=o.kind,
        key=o.key,
        detail=o.detail,
        position=position,
        extent=max(stop, axis.turn_end(position)),
        version=o.version,
        ended_at=o.ended_at,
        ended=o.ended,
        carried_by=carriers.carried(o),
        covered_by=carriers.covered(position),
        fell_out_at=None if cut is None else max(cut, o.version),
        row=0,
        withdrawn_at=None if withdrawn is None else max(withdrawn, o.version),
    )


def _is_routine(o: ObligationPin, born: dict[str, int]) -> bool:
    """Ended before any truncation, withdrawal or live summary took its position out of
    the context."""
    return (
        o.ended_at is not None
        and (o.fell_out_at is None or o.fell_out_at >= o.ended_at)
        and (o.withdrawn_at is None or o.withdrawn_at >= o.ended_at)
        and all(born[node_id] >= o.ended_at for node_id in o.covered_by)
    )


def _bands(state: SessionState, items: list[ObligationPin]) -> list[RoutineBand]:
    width = max(1, -(-state.end // BANDS))
    groups: dict[tuple[str, int], list[ObligationPin]] = {}
    for o in items:
        groups.setdefault((o.kind, o.position // width), []).append(o)
    return [
        RoutineBand(
            kind=kind,
            lo=k * width,
            hi=min(state.end, (k + 1) * width) if state.end else 1,
            raised=tuple(o.version for o in group),
            ended=tuple(o.ended_at or 0 for o in group),
        )
        for (kind, k), group in sorted(groups.items())
    ]


def _packed(pins: list[ObligationPin]) -> Iterator[ObligationPin]:
    """One row each while they are few (labels stay readable), packed otherwise."""
    if len(pins) <= 24:
        yield from (attrs.evolve(p, row=i) for i, p in enumerate(pins))
        return
    order = sorted(range(len(pins)), key=lambda i: (pins[i].position, pins[i].version))
    rows = _rows((pins[i].position, pins[i].extent) for i in order)
    by_index = dict(zip(order, rows, strict=True))
    yield from (attrs.evolve(p, row=by_index[i]) for i, p in enumerate(pins))


def first_covered(
    ranges: Iterable[tuple[int, int, int]],
) -> list[tuple[int, int, int]]:
    """Disjoint ``(lo, hi, version)``: where each range, in version order, first covered."""
    covered: tuple[tuple[int, int], ...] = ()
    out = []
    for lo, hi, version in sorted(ranges, key=lambda r: r[2]):
        at = lo
        for c_lo, c_hi in covered:
            if c_hi <= at or c_lo >= hi:
                continue
            if c_lo > at:
                out.append((at, c_lo, version))
            at = max(at, c_hi)
        if at < hi:
            out.append((at, hi, version))
        covered = merge_spans([*covered, (lo, hi)])
    return sorted(out)


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
                truncated_at=_at(cuts, lo),
                spilled_at=_at(spills, lo),
                withdrawn_at=_at(gone, lo),
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
    pieces = _pieces(first_covered(_withdrawn_positions(axis, withdrawals)))
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


def _at(pieces: list[tuple[int, int, int]], i: int) -> int | None:
    k = bisect.bisect_right(pieces, (i, float("inf"), 0)) - 1
    return pieces[k][2] if k >= 0 and pieces[k][0] <= i < pieces[k][1] else None


def _ranges(state: SessionState) -> Iterator[RangeMark]:
    cuts = _pieces(first_covered((t.lo, t.hi, t.version) for t in state.truncations))
    for t in state.truncations:
        yield RangeMark(
            kind="truncation",
            lo=t.lo,
            hi=t.hi,
            version=t.version,
            detail=t.reason,
            pieces=cuts.get(t.version, ()),
        )
    spills = _pieces(first_covered((s.lo, s.hi, s.version) for s in state.spills))
    for s in state.spills:
        yield RangeMark(
            kind="spill",
            lo=s.lo,
            hi=s.hi,
            version=s.version,
            detail=f"{s.handle} ({s.bytes:,} bytes, sha256 {s.sha256[:16]}…)",
            pieces=spills.get(s.version, ()),
        )


def _pieces(found: list[tuple[int, int, int]]) -> dict[int, tuple[tuple[int, int], ...]]:
    out: dict[int, list[tuple[int, int]]] = {}
    for lo, hi, version in found:
        out.setdefault(version, []).append((lo, hi))
    return {version: tuple(spans) for version, spans in out.items()}


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
            detail=r.reason,
        )
