"""Hypothesis strategies, in one place: single events, and valid session scripts."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = [
    "Step",
    "api_calls",
    "compacted",
    "events",
    "junk",
    "scripts",
    "spans",
    "st",
    "violations",
]

import reducers as r

chars = st.characters(codec="utf-8", exclude_categories=["Cs"])
names = st.text(chars, min_size=1, max_size=12)
texts = st.text(chars, max_size=40)
counts = st.integers(min_value=0, max_value=2**40)
sha = st.text("0123456789abcdef", min_size=64, max_size=64)
id_lists = st.lists(names, max_size=3)
_part = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=8
)
handles = st.lists(
    _part.filter(lambda p: p not in (".", "..") and "/" not in p and "\\" not in p),
    min_size=1,
    max_size=3,
).map("/".join)


@st.composite
def spans(draw: st.DrawFn, strict: bool = True) -> tuple[int, int]:
    lo = draw(counts)
    return lo, lo + draw(st.integers(min_value=1 if strict else 0, max_value=10_000))


def violations() -> st.SearchStrategy[r.Violation]:
    return st.builds(
        r.Violation,
        rule=st.sampled_from(["C1", "C2", "C3", "C4", "C5", "M1", "M2", "M3"]),
        name=names,
        message=texts,
        lo=st.none() | counts,
        hi=st.none() | counts,
    )


@st.composite
def compacted(draw: st.DrawFn) -> r.Compacted:
    input_lo, input_hi = draw(spans(strict=False))
    covers_lo, covers_hi = draw(spans())
    return r.Compacted(
        node_id=draw(names),
        tier=draw(st.sampled_from([1, 2])),
        input_lo=input_lo,
        input_hi=input_hi,
        covers_lo=covers_lo,
        covers_hi=covers_hi,
        tail_start=draw(counts),
        summary=draw(texts),
        tokens=draw(counts),
        dispositions=draw(st.dictionaries(names, st.sampled_from(r.DISPOSITIONS), max_size=3)),
        resolved_ids=draw(id_lists),
        unresolved_ids=draw(id_lists),
        constraints=draw(id_lists),
        replaces=draw(id_lists),
    )


@st.composite
def _ranged(draw: st.DrawFn, /, cls: type[Any], **fields: Any) -> Any:
    lo, hi = draw(spans())
    return cls(lo=lo, hi=hi, **{k: draw(v) for k, v in fields.items()})


@st.composite
def _config_event(draw: st.DrawFn) -> r.SessionStarted:
    window = draw(counts)
    return r.SessionStarted(
        window_tokens=window,
        trigger_tokens=draw(st.integers(0, window)),
        truncator_unit=draw(st.sampled_from(r.UNITS)),
        floor_span=draw(counts),
        floor_unit=draw(st.sampled_from(r.UNITS)),
        on_unsafe=draw(st.sampled_from(["spill", "halt"])),
    )


def events() -> st.SearchStrategy[r.Event]:
    """Any single well-formed event of any type."""
    return st.one_of(
        _config_event(),
        st.builds(r.TurnAppended, index=counts, role=names, content=texts, tokens=counts),
        st.builds(r.CallOpened, call_id=names, kind=st.sampled_from(r.CALL_KINDS), name=texts),
        st.builds(r.CallResolved, call_id=names, outcome=texts),
        st.builds(r.ConstraintStated, key=names, text=texts),
        st.builds(r.ConstraintLifted, key=names),
        st.builds(
            r.ItemDisposed, key=names, disposition=st.sampled_from(r.DISPOSITIONS), reason=texts
        ),
        _ranged(r.Truncated, reason=texts),
        _ranged(r.Spilled, handle=handles, sha256=sha, bytes=counts),
        st.builds(r.Checkpointed, at=counts),
        compacted(),
        st.builds(
            r.CompactionRefused,
            proposal=compacted(),
            violations=st.lists(violations(), max_size=3),
            action=st.sampled_from(["spilled", "halted"]),
        ),
        st.builds(
            r.MarkerEmitted,
            marker_id=names,
            node_id=names,
            tier_depth=st.sampled_from([1, 2]),
            resolved_ids=id_lists,
        ),
        st.builds(
            r.MarkerRefused,
            marker_id=names,
            node_id=names,
            violations=st.lists(violations(), max_size=3),
        ),
        st.builds(r.MarkerInvalidated, marker_id=names, rule=names, reason=texts),
        st.builds(
            r.Resumed,
            marker_id=names,
            source=st.sampled_from(["digest", "raw_checkpoint"]),
            checkpoint_at=st.none() | counts,
            context_sha256=sha,
            reason=texts,
        ),
        st.builds(r.TurnRetracted, index=counts, reason=texts),
        st.builds(r.ContextCleared, before=counts, reason=texts),
        st.builds(
            r.Retold,
            index=counts,
            constraints=st.dictionaries(names, sha, max_size=2),
            dispositions=st.dictionaries(names, st.sampled_from(r.DISPOSITIONS), max_size=2),
            calls=st.lists(names, min_size=1, max_size=2, unique=True),
            max_chars=st.none() | counts,
            cut=counts,
        ),
    )


# -- session scripts: sequences of API calls a runtime could make ------------------------
Step = tuple[str, dict[str, Any]]


@st.composite
def scripts(draw: st.DrawFn, max_steps: int = 40) -> list[Step]:
    """A list of API calls; some are unsafe or invalid on purpose (the session decides)."""
    steps: list[Step] = []
    for i in range(draw(st.integers(1, max_steps))):
        kind = draw(
            st.sampled_from(
                ["turn"] * 6
                + ["call", "resolve", "constraint", "lift", "dispose", "truncate", "spill"]
                + ["checkpoint", "compact", "compact", "marker", "resume"]
                + ["retract", "clear", "restate", "retell"]
            )
        )
        steps.append((kind, _params(draw, kind, i)))
    return steps


def _params(draw: st.DrawFn, kind: str, i: int) -> dict[str, Any]:
    pick = st.integers(0, 1_000)
    if kind == "turn":
        return {"tokens": draw(st.integers(0, 300)), "role": draw(st.sampled_from(["u", "a"]))}
    if kind in ("call", "resolve"):
        return {"call": f"c{draw(st.integers(0, 5))}"}
    if kind in ("constraint", "lift"):
        return {"key": f"k{draw(st.integers(0, 3))}"}
    if kind == "dispose":
        return {"key": f"d{draw(st.integers(0, 3))}", "disp": draw(st.sampled_from(r.DISPOSITIONS))}
    if kind == "compact":
        return {
            "a": draw(pick),
            "b": draw(pick),
            "tail": draw(pick),
            "tier": draw(st.sampled_from([1, 2])),
            "carry": draw(st.booleans()),
            "replace": draw(st.booleans()),
            "exact_seam": draw(st.booleans()),
        }
    return {"a": draw(pick), "b": draw(pick), "n": i}


# -- junk: what a careless caller passes to the API -----------------------------------------
def junk() -> st.SearchStrategy[Any]:
    """Values of the wrong type or out of range, and a few valid ones among them."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([2**63 - 1, 2**63, 2**64, -1, 0, 1, 3]),
        st.floats(allow_nan=True),
        st.text(max_size=5),
        st.sampled_from(["\ud800", "a\udfffb", "", "u", "n1", "m1", "c1", "k", "rejected"]),
        st.binary(max_size=3),
    )
    return st.one_of(
        scalars,
        st.lists(scalars, max_size=3),
        st.tuples(scalars),
        st.tuples(scalars, scalars),
        st.dictionaries(scalars.filter(lambda v: v.__hash__ is not None), scalars, max_size=2),
    )


_SIGNATURES: dict[str, tuple[str, ...]] = {
    "append_turn": ("role", "content", "tokens"),
    "extend": ("events",),
    "open_call": ("call_id", "kind", "name"),
    "resolve_call": ("call_id", "outcome"),
    "state_constraint": ("key", "text"),
    "lift_constraint": ("key",),
    "dispose": ("key", "disposition", "reason"),
    "truncate": ("lo", "hi", "reason"),
    "checkpoint": (),
    "retract_turn": ("index", "reason"),
    "clear_context": ("reason",),
    "spill": ("lo", "hi"),
    "compact": (
        "tier",
        "input",
        "covers",
        "tail_start",
        "summary",
        "tokens",
        "dispositions",
        "resolved_ids",
        "unresolved_ids",
        "constraints",
        "replaces",
    ),
    "emit_marker": ("node_id",),
    "resume": ("marker_id",),
    "state_at": ("version",),
    "events": ("start", "stop"),
    "turns": ("lo", "hi"),
}
_READS = ("state_at", "events", "turns")


@st.composite
def api_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """One Session method and junk keyword arguments for it (expected_version included)."""
    method = draw(st.sampled_from(sorted(_SIGNATURES)))
    kwargs = {name: draw(junk()) for name in _SIGNATURES[method]}
    if method not in _READS and draw(st.booleans()):
        kwargs["expected_version"] = draw(junk())
    return method, kwargs
