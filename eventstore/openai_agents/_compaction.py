"""A ``TierlogSession`` compaction planned from ``SessionState``, before the summarizer runs.

``plan_compaction`` decides whether the session is due (occupancy at the trigger, or
forced), splits the view into what the summary folds and the retained tail, reaches
back to the recovery floor, and gathers the obligations the summary must carry: a
``Plan`` holding the ``SummaryRequest`` and the spans the commit will propose at the
planned version. ``summary_tokens`` is what the committed summary item counts. Pure:
reading turn texts is handed in; the commit itself is the session's.
"""

from __future__ import annotations

import json

import attrs

from eventstore.openai_agents._items import Item, Span, decode, summary_item
from eventstore.openai_agents._summary import Summary, SummaryRequest
from eventstore.openai_agents._tokens import estimate
from eventstore.openai_agents._view import TurnTexts, entries, floor_start, index_spans, tail_index
from reducers import SessionState, in_spans, merge_spans


@attrs.frozen(kw_only=True)
class Plan:
    """A compaction worked out on the state at ``version``, waiting for its summary."""

    version: int
    request: SummaryRequest
    tier: int
    input: Span
    covers: Span
    tail_start: int
    replaces: tuple[str, ...]


def plan_compaction(
    state: SessionState, *, session_id: str, keep_items: int, force: bool, texts: TurnTexts
) -> Plan | None:
    """The compaction due on ``state`` retaining ``keep_items``, or ``None`` (below the
    trigger unless ``force``, nothing new to fold, or a summary inside the tail)."""
    cfg = state.config
    if cfg is None or (not force and state.occupancy < cfg.trigger_tokens):
        return None
    seen = entries(state, None, texts)
    t = tail_index(seen, keep_items)
    before, tail = seen[:t], seen[t:]
    raw = [e.index for e in before if e.index is not None]
    if not raw or any(e.index is None for e in tail):
        return None  # nothing new to fold, or a summary inside the tail (not ours)
    first_tail = tail[0].index if tail else None
    tail_start = state.end if first_tail is None else state.position_of_turn(first_tail)
    nodes = [e.node for e in before if e.node is not None]
    first_raw = state.position_of_turn(raw[0])
    covers_lo = min([first_raw, *(n.covers_lo for n in nodes)])
    # the summarizer must see the recovery floor raw (C2), even where the previous
    # summary covers it; withdrawn turns are not handed over (they left the context)
    input_lo = min(first_raw, floor_start(state, tail_start))
    items = [summary_item(n.summary) for n in nodes]
    items += raw_items(state, input_lo, tail_start, texts)

    evicted = state.evicted

    def owed(position: int) -> bool:  # not resident once the summary replaces the rest
        return position < tail_start or in_spans(evicted, position)

    request = SummaryRequest(
        session_id=session_id,
        items=tuple(items),
        retained=tuple(e.item for e in tail),
        open_calls=tuple(c for _, c in sorted(state.open_calls.items()) if owed(c.position)),
        constraints=tuple(c for _, c in sorted(state.constraints.items()) if owed(c.position)),
        negative_facts=tuple(f for _, f in sorted(state.dispositions.items()) if owed(f.position)),
    )
    return Plan(
        version=state.version,
        request=request,
        tier=2 if nodes else 1,
        input=(input_lo, tail_start),
        covers=(covers_lo, tail_start),
        tail_start=tail_start,
        replaces=tuple(n.node_id for n in nodes),
    )


def raw_items(state: SessionState, lo: int, hi: int, texts: TurnTexts) -> list[Item]:
    """Raw items of ``[lo, hi)`` neither withdrawn nor truncated, read from the log."""
    cut = merge_spans([*state.withdrawn, *index_spans(state, state.truncated)])
    read = texts(state.turn_index(lo), state.turn_stop(hi))
    return [decode(role, text) for index, role, text in read if not in_spans(cut, index)]


def summary_tokens(summary: Summary) -> int:
    """The tokens the summary item counts: its own ``tokens``, else an estimate."""
    if summary.tokens is not None:
        return summary.tokens
    return estimate(json.dumps(summary_item(summary.text), ensure_ascii=False))
