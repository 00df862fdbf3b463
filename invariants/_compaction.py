"""C1-C5: may this compaction replace history? Pure: (state, proposal) -> violations.

The proposal's claims are checked against the ledger too: a call it lists as
resolved while the log holds it open is refused under M1 (``false_closure``).
"""

from __future__ import annotations

from collections.abc import Iterator

from invariants._claims import (
    Carrier,
    carries_call,
    carries_constraint,
    carries_fact,
    false_closure,
    falsely_closed,
)
from reducers import (
    Compacted,
    InvalidEvent,
    SessionConfig,
    SessionState,
    Violation,
    span_covered,
)


def check_compaction(state: SessionState, proposal: Compacted) -> list[Violation]:
    """Every C1-C5 violation of ``proposal`` against ``state`` (empty when safe), and
    its ``false_closure`` (M1) if it lists an open call as resolved.

    Spills in ``state`` count as verified: the caller drops those whose file no
    longer matches its sha256 before asking.
    """
    cfg = state.config
    if cfg is None:
        raise InvalidEvent("the session has not started")
    found = _unit(cfg)
    window = floor(state, proposal)
    if window is not None:
        floor_start = window[0]
        found += _floor_coverage(proposal, floor_start)
        found += _evicted_evidence(state, proposal, floor_start)
    found += _seam(proposal)
    found += _evicted_obligations(state, proposal)
    found += false_closure(state, proposal)
    return found


def floor(state: SessionState, proposal: Compacted) -> tuple[int, int] | None:
    """The recovery floor ``[tail_start - floor_span, tail_start)`` of a proposal, or
    ``None`` when its unit differs from the truncator's (C1: it cannot be enforced)."""
    cfg = state.config
    if cfg is None or cfg.floor_unit != cfg.truncator_unit:
        return None
    return max(0, proposal.tail_start - cfg.floor_span), proposal.tail_start


def _unit(cfg: SessionConfig) -> list[Violation]:
    if cfg.floor_unit == cfg.truncator_unit:
        return []
    return [
        Violation(
            rule="C1",
            name="unit_mismatch",
            message=(
                f"the floor is {cfg.floor_span} {cfg.floor_unit} but the truncator counts "
                f"{cfg.truncator_unit}: the floor cannot be enforced"
            ),
        )
    ]


def _floor_coverage(p: Compacted, floor_start: int) -> list[Violation]:
    if p.input_lo <= floor_start and p.input_hi >= p.tail_start:
        return []
    return [
        Violation(
            rule="C2",
            name="floor_not_covered",
            message=(
                f"summarizer input [{p.input_lo}, {p.input_hi}) does not cover the floor "
                f"[{floor_start}, {p.tail_start})"
            ),
            lo=floor_start,
            hi=p.tail_start,
        )
    ]


def _evicted_evidence(state: SessionState, p: Compacted, floor_start: int) -> list[Violation]:
    spilled = state.spilled
    found = []
    for cut in state.truncations:
        lo, hi = max(cut.lo, floor_start), min(cut.hi, p.tail_start)
        if lo < hi and not span_covered(spilled, lo, hi):
            found.append(
                Violation(
                    rule="C3",
                    name="evidence_evicted",
                    message=(
                        f"truncation at version {cut.version} evicted [{lo}, {hi}) of the floor "
                        f"[{floor_start}, {p.tail_start}) and no verified spill holds it"
                    ),
                    lo=lo,
                    hi=hi,
                )
            )
    return found


def _seam(p: Compacted) -> list[Violation]:
    if p.covers_hi == p.tail_start:
        return []
    lo, hi = sorted((p.covers_hi, p.tail_start))
    what = "a hole" if p.covers_hi < p.tail_start else "covered twice"
    return [
        Violation(
            rule="C4",
            name="seam_hole",
            message=(
                f"summary covers up to {p.covers_hi} but the tail starts at {p.tail_start}: "
                f"[{lo}, {hi}) is {what}"
            ),
            lo=lo,
            hi=hi,
        )
    ]


def _evicted_obligations(state: SessionState, p: Compacted) -> list[Violation]:
    return [
        Violation(rule="C5", name="obligation_evicted", message=message, lo=lo, hi=hi)
        for message, lo, hi in _uncarried(state, p)
    ]


def _uncarried(state: SessionState, p: Compacted) -> Iterator[tuple[str, int, int]]:
    carriers: list[Carrier] = [
        n for n in state.nodes.values() if n.live and n.node_id not in p.replaces
    ]
    carriers.append(p)
    truncated = state.truncated
    false = set(falsely_closed(p, state.open_calls))  # reported as M1 false_closure

    def cut_of(position: int) -> tuple[int, int] | None:
        return next(((lo, hi) for lo, hi in truncated if lo <= position < hi), None)

    for call in sorted(state.open_calls.values(), key=lambda c: c.call_id):
        cut = cut_of(call.position)
        if call.call_id in false:
            continue
        if cut and not any(carries_call(c, call.call_id) for c in carriers):
            yield (
                f"open {call.kind} {call.call_id!r} ({call.name}) raised at {call.position} "
                "was truncated and is in neither resolved_ids nor unresolved_ids",
                *cut,
            )
    for con in sorted(state.constraints.values(), key=lambda c: c.key):
        cut = cut_of(con.position)
        if cut and not any(carries_constraint(c, con) for c in carriers):
            yield (
                f"pending constraint {con.key!r} ({con.text!r}) raised at {con.position} "
                "was truncated and is not in constraints",
                *cut,
            )
    for fact in sorted(state.dispositions.values(), key=lambda d: d.key):
        cut = cut_of(fact.position)
        if cut and not any(carries_fact(c, fact) for c in carriers):
            yield (
                f"negative fact {fact.key!r} ({fact.disposition}) raised at {fact.position} "
                f"was truncated and is not in dispositions as {fact.disposition!r}",
                *cut,
            )
