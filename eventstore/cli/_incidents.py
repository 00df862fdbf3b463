"""The SPEC's two acceptance incidents, as scripts a runtime would run.

``tierlog demo`` narrates them; the tests assert on them. Each step calls
``say`` with a line a person can read: what the runtime tried and what tierlog
answered (rule, range, keys).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from eventstore._journal import Journal
from eventstore._session import Session
from eventstore._values import Context
from invariants import MarkerInvalid, UnrecoverableCompactionError
from reducers import JournalError, Node, SessionConfig, Violation

Say = Callable[[str], None]


@attrs.frozen(kw_only=True)
class DroppedRejection:
    """What incident 1 produced."""

    session: Session
    refusal: MarkerInvalid
    fallback: Context
    depth_session: Session
    l1_marker: str
    digest_before: Context
    fallback_after_l2: Context


@attrs.frozen(kw_only=True)
class EvictedConstraint:
    """What incident 2 produced."""

    session: Session
    refusal: UnrecoverableCompactionError
    units_agree: Session
    refusal_units_agree: UnrecoverableCompactionError


def _violations(say: Say, violations: tuple[Violation, ...]) -> None:
    for v in violations:
        say(f"      {v}")


def _expect(kind: type[JournalError], action: Callable[[], object]) -> JournalError:
    try:
        action()
    except kind as exc:
        return exc
    raise AssertionError(f"expected {kind.__name__}")  # pragma: no cover - the demo's premise


def _migration_opening(s: Session) -> None:
    s.append_turn("user", "Add tenant_id to orders. The migration must be reversible.", 40)
    s.state_constraint("reversible", "the migration must be reversible")
    s.append_turn("assistant", "Plan A: add-column-then-backfill in one migration.", 60)
    s.open_call("dry-run-1", "tool_call", "migrate --dry-run migrations/003_up.sql")
    s.append_turn("tool", "dry run FAILED: ACCESS EXCLUSIVE lock on orders for 41 s", 80)
    s.resolve_call("dry-run-1", "failed: lock held for 41 s")
    s.append_turn("user", "No. Do not lock orders: drop add-column-then-backfill.", 30)
    s.dispose("add-column-then-backfill", "rejected", "dry run locked orders; user rejected it")
    s.open_call("down-sql", "file_handle", "migrations/003_down.sql")
    s.append_turn("assistant", "Wrote the rollback script migrations/003_down.sql.", 50)
    s.resolve_call("down-sql", "written, 14 lines")
    s.append_turn("assistant", "Plan B: shadow table, dual writes, swap.", 70)
    s.checkpoint()
    s.append_turn("user", "Go with plan B.", 10)
    s.append_turn("assistant", "Creating orders_shadow.", 40)


_INCIDENT_1 = SessionConfig(
    window_tokens=8_000,
    trigger_tokens=6_000,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="halt",
)


def _summarise(s: Session, tier: int, summary: str, **carried: Any) -> Node:
    """A compaction of the first six turns that carries the constraint and both calls."""
    return s.compact(
        tier=tier,
        input=(0, 6),
        covers=(0, 6),
        tail_start=6,
        summary=summary,
        tokens=len(summary) // 4,
        constraints=["reversible"],
        resolved_ids=["dry-run-1", "down-sql"],
        **carried,
    )


def dropped_rejection(journal: Journal, say: Say) -> DroppedRejection:
    """Incident 1: a digest that drops a rejection, and an L1 marker re-framed by L2."""
    say("Incident 1 - the dropped rejection")
    s, refusal, fallback = _lossy_digest(journal, say)
    say("  Second case: an L1 marker whose framing digest is re-compacted to L2")
    d, marker_id, digest, after = _depth_change(journal, say)
    return DroppedRejection(
        session=s,
        refusal=refusal,
        fallback=fallback,
        depth_session=d,
        l1_marker=marker_id,
        digest_before=digest,
        fallback_after_l2=after,
    )


def _lossy_digest(journal: Journal, say: Say) -> tuple[Session, MarkerInvalid, Context]:
    s = journal.start_session("incident-1-dropped-rejection", _INCIDENT_1)
    _migration_opening(s)
    say(f"  {s.state.turns} turns: reversible migration asked, add-column-then-backfill dry run")
    say("  failed and was REJECTED by the user, rollback migrations/003_down.sql written,")
    say(f"  raw checkpoint at turn {s.state.checkpoints[-1]}.")
    node = _summarise(s, 2, "explored approaches")
    say(f"  runtime commits an L2 digest {node.node_id} over [0, 6): {node.summary!r}")
    say("  runtime emits a marker on it ...")
    refusal = _expect(MarkerInvalid, lambda: s.emit_marker(node.node_id))
    assert isinstance(refusal, MarkerInvalid)
    say(f"    REFUSED (MarkerInvalid, written as MarkerRefused {refusal.marker_id}):")
    _violations(say, refusal.violations)
    fallback = s.resume(refusal.marker_id)
    say(f"  resume({refusal.marker_id}) -> {fallback.source} at turn {fallback.checkpoint_at}:")
    say(f"    every raw turn before it, verbatim (sha256 {fallback.sha256[:16]}...),")
    say("    never a patched digest")
    return s, refusal, fallback


def _depth_change(journal: Journal, say: Say) -> tuple[Session, str, Context, Context]:
    d = journal.start_session("incident-1-depth-change", _INCIDENT_1)
    _migration_opening(d)
    rejected = {"add-column-then-backfill": "rejected"}
    l1 = _summarise(
        d,
        1,
        "Reversible migration asked; add-column-then-backfill dry run failed, rejected;"
        " rollback in migrations/003_down.sql; plan B = shadow table.",
        dispositions=rejected,
    )
    marker = d.emit_marker(l1.node_id)
    digest = d.resume(marker.marker_id)
    say(f"  L1 node {l1.node_id} carries the rejection; marker {marker.marker_id} (depth L1) is")
    say(f"  valid and resume returns the {digest.source}.")
    l2 = _summarise(d, 2, "migration work so far", dispositions=rejected, replaces=[l1.node_id])
    m = d.state.markers[marker.marker_id]
    say(f"  runtime re-compacts {l1.node_id} into L2 digest {l2.node_id}; in the same transaction:")
    say(f"    MarkerInvalidated {m.marker_id}:")
    for reason in (m.invalidated_reason or "").split("; "):
        say(f"      {reason}")
    after = d.resume(marker.marker_id)
    say(f"  resume({marker.marker_id}) -> {after.source} at turn {after.checkpoint_at}")
    return d, marker.marker_id, digest, after


def _tool_phase(s: Session) -> tuple[int, int]:
    """Turns 0..: the constraint in turn 1, then tool output until past the trigger."""
    s.append_turn("user", "Clean up the nginx config on this box.", 900)
    s.append_turn("user", "Never modify files under /etc - copy them to ./work first.", 600)
    s.state_constraint("no-etc-writes", "never modify files under /etc")
    trigger = s.state.config.trigger_tokens if s.state.config else 0
    while s.state.occupancy <= trigger:
        s.open_call(f"read-{s.state.turns}", "tool_call", "cat /etc/nginx/sites-enabled/*")
        s.append_turn("tool", "server { listen 443 ssl; ... }", 6_000)
        s.resolve_call(f"read-{s.state.turns - 1}", "ok")
    before = s.state.occupancy
    s.truncate(0, s.state.position_of_turn(8), "budget: occupancy past trigger")
    while s.state.occupancy < 163_000:
        tokens = min(6_000, 163_000 - s.state.occupancy)
        s.append_turn("tool", "location / { proxy_pass http://app; }", tokens)
    return before, s.state.occupancy


def _propose(s: Session) -> None:
    st = s.state
    tail = st.position_of_turn(st.turns - 2)
    s.compact(
        tier=1,
        input=(st.position_of_turn(9), tail),
        covers=(st.position_of_turn(9), tail),
        tail_start=tail,
        summary="read nginx configs; drafted new server blocks",
        tokens=900,
    )


def evicted_constraint(journal: Journal, say: Say) -> EvictedConstraint:
    """Incident 2: a compaction proposed after the constraint's turn was truncated."""
    say("Incident 2 - the evicted constraint")
    config = SessionConfig(
        window_tokens=200_000,
        trigger_tokens=160_000,
        truncator_unit="tokens",
        floor_span=12,
        floor_unit="turns",
        on_unsafe="spill",
    )
    s = journal.start_session("incident-2-evicted-constraint", config)
    peak, now = _tool_phase(s)
    say("  turn 1: user says 'never modify files under /etc' (pending constraint no-etc-writes)")
    say(f"  tool-heavy phase: occupancy {peak:,} > trigger 160,000; 8 oldest turns truncated")
    say(f"  occupancy at {now:,}; runtime proposes an L1 compaction whose input starts at turn 9")
    before = s.state
    refusal = _expect(UnrecoverableCompactionError, lambda: _propose(s))
    assert isinstance(refusal, UnrecoverableCompactionError)
    spill = s.state.spills[-1]
    say(f"    REFUSED (UnrecoverableCompactionError, {refusal.action}):")
    _violations(say, refusal.violations)
    say(f"    raw transcript spilled first: {spill.handle}")
    say(f"      {spill.bytes:,} bytes, sha256 {spill.sha256[:16]}... (recorded as Spilled)")
    after = s.state
    say(
        f"    tier state: nodes {len(before.nodes)} -> {len(after.nodes)}, occupancy"
        f" {before.occupancy:,} -> {after.occupancy:,}, tail {before.tail_start} ->"
        f" {after.tail_start}"
    )

    say("  Same session with the floor in tokens (12,000, units agree): C5 alone still refuses")
    agree = journal.start_session(
        "incident-2-units-agree", attrs.evolve(config, floor_span=12_000, floor_unit="tokens")
    )
    _tool_phase(agree)
    second = _expect(UnrecoverableCompactionError, lambda: _propose(agree))
    assert isinstance(second, UnrecoverableCompactionError)
    _violations(say, second.violations)
    return EvictedConstraint(
        session=s, refusal=refusal, units_agree=agree, refusal_units_agree=second
    )


SQL_HINTS = (
    "SELECT session_id, version, rules, action FROM compaction_refusals",
    "SELECT session_id, marker_id, rules FROM marker_refusals",
    "SELECT session_id, marker_id, rule, reason FROM marker_invalidations",
    "SELECT session_id, marker_id, source, checkpoint_at FROM resumes",
    "SELECT session_id, kind, key, detail, after_turn FROM obligations WHERE outstanding",
)
