"""What the runner sees of a session: the view, worked out from ``SessionState``.

The view is the live summaries and the runs of resident turns (neither summarized,
truncated nor withdrawn), in order (``view``, as ``Slot`` values); ``entries`` reads
the slots' items back, the latest ``limit`` of them, as ``Entry`` values.
``tail_index`` finds where a compaction's retained tail starts so that no tool output
loses its call nor a call its reasoning item, and ``floor_start`` where the recovery
floor before it starts. Everything here is pure: reading turn texts is handed in.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence

import attrs

from eventstore.openai_agents._items import (
    CALL_OUTPUTS,
    OUTPUT_CALLS,
    Item,
    Span,
    decode,
    summary_item,
)
from reducers import Node, SessionState, merge_spans

TurnTexts = Callable[[int, int], Iterable[tuple[int, str, str]]]
"""``(index, role, content)`` of the turns ``lo <= index < hi``, read from the log."""


@attrs.frozen
class Entry:
    """One item of the view: the turn ``index``, or a live summary ``node``."""

    index: int | None
    item: Item
    node: Node | None = None


@attrs.frozen
class Slot:
    """A run of the view: one live summary node, or the resident turns ``[lo, hi)``."""

    node: Node | None
    lo: int
    hi: int

    @property
    def size(self) -> int:
        return 1 if self.node is not None else self.hi - self.lo


def index_spans(state: SessionState, spans: Iterable[Span]) -> list[Span]:
    """Position spans as turn-index spans."""
    return [(state.turn_index(lo), state.turn_stop(hi)) for lo, hi in spans]


def budget_gone(state: SessionState) -> tuple[Span, ...]:
    """Turn indices a live summary or a truncation took out of the context."""
    covered = ((n.covers_lo, n.covers_hi) for n in state.live_nodes)
    return merge_spans(index_spans(state, [*state.truncated, *covered]))


def view(state: SessionState) -> list[Slot]:
    """Live summaries and runs of resident turns, in the order the runner sees them."""
    gone = merge_spans([*budget_gone(state), *state.withdrawn])
    keyed = [
        ((state.turn_index(n.covers_lo), 0), Slot(node=n, lo=0, hi=0)) for n in state.live_nodes
    ]
    lo = 0
    for gone_lo, gone_hi in (*gone, (state.turns, state.turns)):
        if lo < gone_lo:
            keyed.append(((lo, 1), Slot(node=None, lo=lo, hi=gone_lo)))
        lo = max(lo, gone_hi)
    return [slot for _, slot in sorted(keyed, key=lambda pair: pair[0])]


def _last(slots: list[Slot], limit: int) -> list[Slot]:
    """The slots holding the latest ``limit`` items (the first one cut if needed)."""
    out: list[Slot] = []
    for slot in reversed(slots):
        if limit <= 0:
            break
        if slot.size > limit:
            slot = attrs.evolve(slot, lo=slot.hi - limit)
        out.append(slot)
        limit -= slot.size
    return out[::-1]


def entries(state: SessionState, limit: int | None, texts: TurnTexts) -> list[Entry]:
    """The view: live summaries and resident items, the latest ``limit`` of them."""
    slots = view(state)
    if limit is not None:
        slots = _last(slots, limit)
    out: list[Entry] = []
    for slot in slots:
        if slot.node is not None:
            out.append(Entry(None, summary_item(slot.node.summary), slot.node))
        else:
            read = texts(slot.lo, slot.hi)
            out += [Entry(index, decode(role, content)) for index, role, content in read]
    return out


def tail_index(entries: Sequence[Entry], keep: int) -> int:
    """Where the retained tail starts in the view: the latest ``keep`` items, moved
    earlier until no tool output in it is cut from its call and no call from the
    reasoning item before it; never on a summary."""
    n = len(entries)
    t = max(0, n - keep)
    while t < n and entries[t].index is None:
        t += 1
    moved = True
    while moved:
        moved = False
        calls: dict[str, int] = {}
        for j in range(t):
            item = entries[j].item
            if item.get("type") in CALL_OUTPUTS and isinstance(item.get("call_id"), str):
                calls[item["call_id"]] = j
        for j in range(t, n):
            item = entries[j].item
            call_id = item.get("call_id")
            at = calls.get(call_id) if item.get("type") in OUTPUT_CALLS and call_id else None
            if at is not None and at < t:
                t, moved = at, True
        if t > 0 and entries[t - 1].item.get("type") == "reasoning":
            t, moved = t - 1, True
    return t


def floor_start(state: SessionState, tail_start: int) -> int:
    """The start of the recovery floor before ``tail_start``, on a turn boundary."""
    cfg = state.config
    if cfg is None or cfg.floor_unit != cfg.truncator_unit:
        return tail_start  # C1 refuses such a session's compactions anyway
    start = max(0, tail_start - cfg.floor_span)
    if state.unit == "turns":
        return start
    return state.tok_starts[bisect.bisect_right(state.tok_starts, start) - 1]
