"""Events for the contract tests: one of each type, and turns by the dozen."""

from __future__ import annotations

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
    Ingested,
    ItemDisposed,
    MarkerEmitted,
    MarkerInvalidated,
    MarkerRefused,
    Noted,
    Resumed,
    Retold,
    SessionStarted,
    Spilled,
    Truncated,
    TurnAppended,
    TurnRetracted,
    Violation,
)

TURN = TurnAppended(index=0, role="user", content="hello", tokens=3)


def turns(n: int) -> list[Event]:
    """Turns 0 to ``n - 1``, their contents ``t0``, ``t1``, ..."""
    return [TurnAppended(index=i, role="user", content=f"t{i}", tokens=2) for i in range(n)]


def samples() -> list[Event]:
    """One event of each type, with the text and numbers a store must keep byte for
    byte (non-ASCII, quotes, escapes, a line separator, integers past 32 bits)."""
    violation = Violation(
        rule="C5", name="obligation_evicted", message="constraint 'no-etc' — lost ✓", lo=0, hi=4
    )
    node = Compacted(
        node_id="n1",
        tier=1,
        input_lo=0,
        input_hi=4,
        covers_lo=0,
        covers_hi=4,
        tail_start=4,
        summary='grepped "migrations/" \\ twice\nthen stopped',
        tokens=50,
        dispositions={"add-col": "rejected"},
        resolved_ids=("c1",),
        unresolved_ids=("c2",),
        constraints=("no-etc",),
        replaces=("n0",),
    )
    sha = "ab" * 32
    return [
        SessionStarted(
            window_tokens=200_000,
            trigger_tokens=160_000,
            truncator_unit="tokens",
            floor_span=12,
            floor_unit="turns",
            on_unsafe="spill",
        ),
        TurnAppended(
            index=0, role="user", content="Never touch /etc. 日本語 \u2028 🙂", tokens=2**40
        ),
        CallOpened(call_id="c1", kind="tool_call", name="grep -rn tenant_id"),
        CallResolved(call_id="c1", outcome="3 matches"),
        ConstraintStated(key="no-etc", text="never modify files under /etc"),
        ConstraintLifted(key="no-etc"),
        ItemDisposed(key="add-col", disposition="rejected", reason="not reversible"),
        Truncated(lo=0, hi=2, reason="budget"),
        Spilled(lo=0, hi=2, handle=f"{sha[:2]}/{sha}.spill", sha256=sha, bytes=1234),
        Checkpointed(at=2),
        node,
        CompactionRefused(proposal=node, violations=[violation], action="spilled"),
        MarkerEmitted(marker_id="m1", node_id="n1", tier_depth=1, resolved_ids=("c1",)),
        MarkerRefused(marker_id="m2", node_id="n1", violations=[violation]),
        MarkerInvalidated(marker_id="m1", rule="M3", reason="re-framed"),
        Resumed(
            marker_id="m1",
            source="raw_checkpoint",
            checkpoint_at=2,
            context_sha256="0" * 64,
            reason="discarded",
        ),
        TurnRetracted(index=1, reason="pop_item"),
        ContextCleared(before=2, reason="clear_session"),
        Noted(kind="chain_fallback", text="read the entries in file order", line=12, count=3),
        Retold(
            index=2,
            constraints={"no-etc": sha},
            dispositions={"add-col": "rejected"},
            calls=("c2",),
            max_chars=2**33,
            cut=1,
        ),
        Ingested(source="s.jsonl", offset=4096, lines=12, sha256=sha, resume='{"leaf":"u"}'),
    ]
