"""Obligations for the timeline builder: where each sits, what carries or covers it,
and which routine ones are counted in position bands. Pure, no I/O."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Final

import attrs

from eventstore._report._spans import Axis, covered_at, first_covered, pack_rows
from eventstore._report._timeline import ObligationPin, RoutineBand
from reducers import SessionState

BANDS: Final = 200  # position bands for routine obligations


@attrs.define
class Open:
    """An obligation as the builder collects it; positions are filled in from the fold."""

    kind: str
    key: str
    detail: str
    version: int
    disposition: str = ""
    ended_at: int | None = None
    ended: str = ""


class Carriers:
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

    def carried(self, o: Open) -> tuple[str, ...]:
        kind = f"negative_fact:{o.disposition}" if o.kind == "negative_fact" else o.kind
        return tuple(self.by_key.get((kind, o.key), ()))

    def covered(self, position: int) -> tuple[str, ...]:
        stop = bisect.bisect_right(self.spans, (position, float("inf")))
        found = [s for s in self.spans[:stop] if s[1] > position]
        return tuple(node_id for *_, node_id in sorted(found, key=lambda s: s[2]))


def pin(axis: Axis, o: Open, carriers: Carriers) -> ObligationPin:
    position = axis.position_at(o.version)
    cut = covered_at(carriers.cuts, position)
    withdrawn = covered_at(carriers.withdrawn, position)
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


def is_routine(o: ObligationPin, born: dict[str, int]) -> bool:
    """Ended before any truncation, withdrawal or live summary took its position out of
    the context."""
    return (
        o.ended_at is not None
        and (o.fell_out_at is None or o.fell_out_at >= o.ended_at)
        and (o.withdrawn_at is None or o.withdrawn_at >= o.ended_at)
        and all(born[node_id] >= o.ended_at for node_id in o.covered_by)
    )


def bands(state: SessionState, items: list[ObligationPin]) -> list[RoutineBand]:
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
            keys=tuple(o.key for o in group),
        )
        for (kind, k), group in sorted(groups.items())
    ]


def packed(pins: list[ObligationPin]) -> Iterator[ObligationPin]:
    """One row each while they are few (labels stay readable), packed otherwise."""
    if len(pins) <= 24:
        yield from (attrs.evolve(p, row=i) for i, p in enumerate(pins))
        return
    order = sorted(range(len(pins)), key=lambda i: (pins[i].position, pins[i].version))
    rows = pack_rows((pins[i].position, pins[i].extent) for i in order)
    by_index = dict(zip(order, rows, strict=True))
    yield from (attrs.evolve(p, row=by_index[i]) for i, p in enumerate(pins))
