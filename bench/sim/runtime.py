"""The agent runtime: one policy, run on either arm, and what it measures.

Per turn: checkpoint at each exchange start, append the turn and its
obligations; past the trigger, truncate what the summarizer cannot read (the
oldest uncovered turns, as in incident 2), compact tier 1, and every
``fold_after`` live nodes re-compact them all into one tier-2 digest; emit a
marker after each compaction. A refusal (``UnrecoverableCompactionError`` or
``MarkerInvalid``) earns one re-summarize per compaction, with the keys the
violations name as must-carry hints. At each crash point, resume the latest
marker and judge the context.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

import attrs

from bench.sim.arms import Arm, Proposal
from bench.sim.obligations import (
    Obligation,
    carried_by,
    context_tokens,
    held_keys,
    live_obligations,
    missing,
)
from bench.sim.summarizer import Summarizer
from bench.sim.workload import KEY, Script, TurnSpec
from eventstore import (
    MarkerInvalid,
    Node,
    SessionConfig,
    SessionState,
    UnrecoverableCompactionError,
)
from reducers import Violation, in_spans


@attrs.frozen(kw_only=True)
class Setting:
    """A window/trigger setting and the runtime's budgets under it (all in tokens)."""

    name: str
    window: int
    trigger: int
    floor: int  # the recovery floor kept summarizable before the tail
    input_budget: int  # the most raw tokens the summarizer reads at once
    tail_min: int  # tokens kept verbatim after a compaction
    fold_after: int  # live nodes that trigger a tier-2 re-compaction

    @property
    def config(self) -> SessionConfig:
        """The session config: a token truncator, the floor in the same unit, spill on unsafe."""
        return SessionConfig(
            window_tokens=self.window,
            trigger_tokens=self.trigger,
            truncator_unit="tokens",
            floor_span=self.floor,
            floor_unit="tokens",
            on_unsafe="spill",
        )


@attrs.define
class Tally:
    """Counters for one arm of one cell; every field is summed over sessions."""

    sessions: int = 0
    obligations: int = 0
    resumes: int = 0
    divergent_resumes: int = 0
    absent_obligations: int = 0
    divergent_digest: int = 0
    divergent_raw: int = 0
    raw_fallbacks: int = 0
    compactions: int = 0
    tier2_compactions: int = 0
    truncations: int = 0
    compaction_refusals: int = 0
    marker_refusals: int = 0
    invalidations: int = 0
    resummaries: int = 0
    spills: int = 0
    unexplained_violations: int = 0
    resumed_tokens: int = 0
    retells: int = 0
    retold_tokens: int = 0
    spilled_bytes: int = 0  # raw bytes the spills hold (as recorded; shared bases count each time)


#: A proposal builder: (must-carry hints, re-read the spilled raw turns?) -> Proposal.
Build = Callable[[tuple[Obligation, ...], bool], Proposal]


def hint_keys(violations: tuple[Violation, ...]) -> set[str]:
    """The obligation keys a refusal's violations name."""
    return {k for v in violations for k in KEY.findall(v.message)}


def framing(state: SessionState) -> Node:
    """The live node a marker must sit on to pass M3: the newest of the highest tier."""
    return max(state.live_nodes, key=lambda n: (n.tier, n.version))


def resident_from(state: SessionState, pos: int) -> int:
    """The first position at or after ``pos`` that no truncation removed."""
    for lo, hi in state.truncated:
        if lo <= pos < hi:
            return hi
    return pos


@attrs.frozen(kw_only=True)
class Plan:
    """A tier-1 compaction step: what to truncate first, and the proposal's ranges."""

    covers_lo: int
    cut: tuple[int, int] | None
    input_lo: int
    tail_start: int


def plan_tier1(state: SessionState, s: Setting) -> Plan | None:
    """Where the next tier-1 summary goes, or ``None`` when there is too little to fold."""
    end, starts = state.end, state.tok_starts
    checkpoints = [p for p in state.checkpoints if end - p >= s.tail_min]
    tail = checkpoints[-1] if checkpoints else 0
    if end - tail > 3 * s.tail_min:  # one long exchange: cut at a turn instead
        tail = starts[bisect.bisect_right(starts, end - s.tail_min) - 1]
    covers_lo = state.tail_start
    if tail - s.floor <= covers_lo:
        return None
    first = resident_from(state, covers_lo)
    cut = starts[bisect.bisect_left(starts, tail - s.input_budget)]
    if cut > first:
        return Plan(covers_lo=covers_lo, cut=(first, cut), input_lo=cut, tail_start=tail)
    return Plan(covers_lo=covers_lo, cut=None, input_lo=first, tail_start=tail)


def seen_by_tier1(
    state: SessionState, lo: int, hi: int, input_lo: int, reread: bool
) -> list[Obligation]:
    """The live obligations a tier-1 summarizer of ``[lo, hi)`` sees and should carry.

    It reads the live summaries and the raw turns from ``input_lo`` on (truncated ones
    only when the runtime feeds the spill back), re-tell turns among them; it should
    carry the calls and constraints raised before ``hi`` (M1) and the negative facts
    raised in ``[lo, hi)`` (M2).
    """
    carried = set().union(*(carried_by(n) for n in state.live_nodes))
    retold = {t.key: state.position_of_turn(t.turn) for t in state.retold.values()}

    def read(position: int) -> bool:
        inside = input_lo <= position < hi
        return inside and (reread or not in_spans(state.truncated, position))

    def visible(ob: Obligation) -> bool:
        if ob.key in carried or read(ob.position):
            return True
        return ob.key in retold and read(retold[ob.key])

    def owed(ob: Obligation) -> bool:
        return ob.position < hi and (ob.kind != "negative" or ob.position >= lo)

    return [ob for ob in live_obligations(state).values() if owed(ob) and visible(ob)]


class Runtime:
    """One session's runtime on one arm."""

    def __init__(
        self,
        arm: Arm,
        setting: Setting,
        summarizer: Summarizer,
        tally: Tally,
        *,
        remark: bool = True,
    ) -> None:
        self.arm = arm
        self.setting = setting
        self.summarizer = summarizer
        self.tally = tally
        self.remark = remark  # re-summarize after MarkerInvalid, or live with the fallback
        self.marker: str | None = None
        self.unexplained: set[str] = set()
        self.quiet_until = 0  # after a step that committed nothing, wait for more tokens
        self.hinted: dict[str, Obligation] = {}  # this step's must-carry hints
        self.reread = False  # this step re-reads the spilled raw log

    # -- the session -------------------------------------------------------------------
    def run(self, script: Script) -> None:
        """Play ``script`` and add this session's counts to the tally."""
        for turn in script.turns:
            self.step(turn)
        self.finish(script)

    def step(self, turn: TurnSpec) -> None:
        """Checkpoint at an exchange, append, shrink past the trigger, crash if due."""
        if turn.exchange_start:
            self.arm.checkpoint()
        self.arm.append(turn)
        occupancy = self.arm.state.occupancy
        if occupancy > self.setting.trigger and occupancy > self.quiet_until:
            self.shrink()
        if turn.crash_after:
            self.crash()

    def finish(self, script: Script) -> None:
        """Judge the session's end and add its counts to the tally."""
        state = self.arm.state
        self.judge(state)
        t = self.tally
        t.sessions += 1
        raised = ("open", "state", "dispose")
        t.obligations += sum(1 for turn in script.turns for op in turn.ops if op.kind in raised)
        t.spills += len(state.spills)
        t.spilled_bytes += sum(s.bytes for s in state.spills)
        t.invalidations += sum(
            1
            for m in state.markers.values()
            if not m.valid and not (m.invalidated_reason or "").startswith("refused at emission")
        )
        t.unexplained_violations += len(self.unexplained)
        t.retells += getattr(self.arm, "retells", 0)
        t.retold_tokens += getattr(self.arm, "retold_tokens", 0)

    # -- compaction --------------------------------------------------------------------
    def shrink(self) -> None:
        """Truncate, compact tier 1, mark; fold into tier 2 when enough nodes are live."""
        plan = plan_tier1(self.arm.state, self.setting)
        if plan is None:
            return
        if plan.cut is not None:
            self.arm.truncate(*plan.cut)
            self.tally.truncations += 1
        self.hinted, self.reread = {}, False

        def build(hints: tuple[Obligation, ...], reread: bool) -> Proposal:
            return self.tier1(plan, hints, reread)

        node = self.commit(build)
        if node is None:
            self.quiet_until = self.arm.state.occupancy + self.setting.tail_min
            return
        self.mark(node, build)
        if len(self.arm.state.live_nodes) >= self.setting.fold_after:
            self.fold()

    def fold(self) -> None:
        """Re-compact every live node into one tier-2 digest, and mark it."""
        self.hinted, self.reread = {}, False

        def build(hints: tuple[Obligation, ...], _: bool) -> Proposal:
            return self.tier2(hints)

        node = self.commit(build)
        if node is not None:
            self.mark(node, build)

    def commit(self, build: Build, *, retry: bool = True) -> Node | None:
        """Compact; on a refusal re-summarize once, the violations added to the hints."""
        try:
            node = self.arm.compact(build(tuple(self.hinted.values()), self.reread))
        except UnrecoverableCompactionError as refused:
            self.tally.compaction_refusals += 1
            self.learn(refused.violations)
            self.reread = True  # the refusal spilled the raw log: the runtime re-reads it
            if not retry:
                return None
            self.tally.resummaries += 1
            return self.commit(build, retry=False)
        self.tally.compactions += 1
        self.tally.tier2_compactions += node.tier == 2
        return node

    def mark(self, node: Node, build: Build) -> None:
        """Emit a marker on the framing node; on MarkerInvalid re-summarize ``node`` (the
        compaction just made) once, the keys the violations name as must-carry hints."""
        if self.emit(framing(self.arm.state)) or not self.remark:
            return
        self.tally.resummaries += 1

        def again(hints: tuple[Obligation, ...], reread: bool) -> Proposal:
            return attrs.evolve(build(hints, reread), replaces=(node.node_id,))

        if self.commit(again) is not None:
            self.emit(framing(self.arm.state))

    def emit(self, target: Node) -> bool:
        """Emit a marker on ``target``; False (and the hints learnt) if it is refused."""
        try:
            self.marker = self.arm.emit_marker(target.node_id)
            return True
        except MarkerInvalid as refused:
            self.tally.marker_refusals += 1
            self.marker = refused.marker_id
            self.learn(refused.violations)
            return False

    def learn(self, violations: tuple[Violation, ...]) -> None:
        """Add the live obligations the violations name to this step's must-carry hints."""
        live = live_obligations(self.arm.state)
        for key in sorted(hint_keys(violations)):
            if key in live:
                self.hinted[key] = live[key]

    def tier1(self, plan: Plan, hints: tuple[Obligation, ...], reread: bool) -> Proposal:
        """A tier-1 summary of ``plan``; ``reread``: fed the spilled raw turns back."""
        state = self.arm.state
        lo, hi = plan.covers_lo, plan.tail_start
        input_lo = lo if reread else plan.input_lo
        seen = seen_by_tier1(state, lo, hi, input_lo, reread)
        carried = self.summarizer.summarize(seen, (1, lo, hi), hints)
        tokens = max(200, min(4_000, state.tokens_in(input_lo, hi) // 25))
        return Proposal(
            tier=1,
            input=(input_lo, hi),
            covers=(lo, hi),
            tail_start=hi,
            summary=f"turns [{lo}, {hi}) summarized",
            tokens=tokens,
            dispositions=carried.dispositions,
            unresolved_ids=carried.unresolved_ids,
            constraints=carried.constraints,
        )

    def tier2(self, hints: tuple[Obligation, ...]) -> Proposal:
        """A tier-2 digest of every live node, at half their tokens."""
        state = self.arm.state
        nodes = state.live_nodes
        lo, hi = min(n.covers_lo for n in nodes), state.tail_start
        live = live_obligations(state)
        seen = [live[k] for n in nodes for k in sorted(carried_by(n)) if k in live]
        carried = self.summarizer.summarize(seen, (2, lo, hi), hints)
        return Proposal(
            tier=2,
            input=(lo, hi),
            covers=(lo, hi),
            tail_start=hi,
            summary=f"digest of turns [{lo}, {hi})",
            tokens=max(200, sum(n.tokens for n in nodes) // 2),
            dispositions=carried.dispositions,
            unresolved_ids=carried.unresolved_ids,
            constraints=carried.constraints,
            replaces=tuple(n.node_id for n in nodes),
        )

    # -- measuring ---------------------------------------------------------------------
    def crash(self) -> None:
        """Resume the latest marker and judge the context it returns."""
        if self.marker is None:
            return
        context = self.arm.resume(self.marker)
        state = self.arm.state
        live = live_obligations(state)
        held = held_keys(context.content)
        absent = missing(live, held)
        t = self.tally
        t.resumes += 1
        t.resumed_tokens += context_tokens(context.content, state.nodes)
        raw = context.source == "raw_checkpoint"
        t.raw_fallbacks += raw
        t.absent_obligations += len(absent)
        if absent:
            t.divergent_resumes += 1
            t.divergent_raw += raw
            t.divergent_digest += not raw
        self.judge(state, held)

    def judge(self, state: SessionState, *held: set[str]) -> None:
        """Note every live obligation that no context, summary, resident turn or spill holds."""
        tiers = held_keys(self.arm.tier_view())
        self.unexplained |= missing(live_obligations(state), tiers, *held, *self.arm.spill_keys())
