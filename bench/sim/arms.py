"""The arms a runtime can sit on: the tierlog journal, the same journal ungated, and the
ungated journal with a re-tell.

``Gated`` drives the real API (``eventstore.open``, ``Session``): compactions and
markers may raise ``UnrecoverableCompactionError`` / ``MarkerInvalid``, resume may
fall back to the raw checkpoint. ``Baseline`` is what today's agent stores do:
the same events folded by tierlog's own pure reducers, in memory, with input
validation but no invariant: every compaction commits, every marker is trusted,
and resume renders the live tiers with tierlog's own digest renderer. ``Retelling`` is
that baseline plus tierlog's re-tell after each truncation and compaction: the
obligations ``invariants.owed`` names come back as one ``system`` turn (the same
block and ``Retold`` event ``Session.retell`` writes). All hand back an
``eventstore.Context``, so one judge reads them all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any, Protocol

import attrs

import eventstore
from bench.sim.obligations import held_keys
from bench.sim.workload import Op, TurnSpec
from eventstore import Context, IntegrityError, Node, Session, SessionConfig, SessionState
from eventstore._files import render_digest
from eventstore._retell import ROLE, estimate_tokens, retold_event, write_block
from invariants import owed, validate
from reducers import (
    CallOpened,
    CallResolved,
    Checkpointed,
    Compacted,
    ConstraintLifted,
    ConstraintStated,
    Event,
    ItemDisposed,
    MarkerEmitted,
    SessionStarted,
    Truncated,
    TurnAppended,
    apply,
    in_spans,
)


@attrs.frozen(kw_only=True)
class Proposal:
    """The arguments of one ``Session.compact`` call."""

    tier: int
    input: tuple[int, int]
    covers: tuple[int, int]
    tail_start: int
    summary: str
    tokens: int
    dispositions: dict[str, str]
    unresolved_ids: tuple[str, ...]
    constraints: tuple[str, ...]
    replaces: tuple[str, ...] = ()


def op_event(op: Op) -> Event:
    """The tierlog event of a script's obligation op."""
    if op.kind == "open":
        return CallOpened(call_id=op.key, kind=op.arg, name=op.detail)
    if op.kind == "resolve":
        return CallResolved(call_id=op.key, outcome=op.detail)
    if op.kind == "state":
        return ConstraintStated(key=op.key, text=op.detail)
    if op.kind == "lift":
        return ConstraintLifted(key=op.key)
    return ItemDisposed(key=op.key, disposition=op.arg, reason=op.detail)


class Arm(Protocol):
    """What the runtime needs from the journal under it."""

    name: str

    @property
    def state(self) -> SessionState: ...
    def append(self, turn: TurnSpec) -> None: ...
    def checkpoint(self) -> None: ...
    def truncate(self, lo: int, hi: int) -> None: ...
    def compact(self, p: Proposal) -> Node: ...
    def emit_marker(self, node_id: str) -> str: ...
    def resume(self, marker_id: str) -> Context: ...
    def spill_keys(self) -> list[set[str]]: ...
    def tier_view(self) -> str: ...


class _Turns:
    """The simulator's copy of the raw turns (what a journal stores verbatim)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, turn: TurnSpec) -> None:
        index = len(self.rows)
        self.rows.append(
            {"content": turn.content, "index": index, "role": turn.role, "tokens": turn.tokens}
        )

    def resident(self, state: SessionState) -> Iterator[dict[str, Any]]:
        """Turns neither truncated nor folded into a live node."""
        gone = state.evicted
        for row in self.rows:
            if not in_spans(gone, state.position_of_turn(row["index"])):
                yield row

    def view(self, state: SessionState) -> str:
        """Live summaries plus resident turns, as a digest context renders them."""
        return render_digest(state.live_nodes, self.resident(state)).decode()


class Gated:
    """A runtime on tierlog: every command goes through the real Session."""

    def __init__(
        self,
        journal: eventstore.Journal,
        session_id: str,
        config: SessionConfig,
        name: str = "tierlog",
    ) -> None:
        self.name = name
        self.journal = journal
        self.session: Session = journal.start_session(session_id, config)
        self.turns = _Turns()
        self._spills: dict[str, set[str]] = {}

    @property
    def state(self) -> SessionState:
        return self.session.state

    def append(self, turn: TurnSpec) -> None:
        s = self.session
        s.append_turn(turn.role, turn.content, turn.tokens)
        self.turns.add(turn)
        for op in turn.ops:
            if op.kind == "open":
                s.open_call(op.key, op.arg, op.detail)
            elif op.kind == "resolve":
                s.resolve_call(op.key, op.detail)
            elif op.kind == "state":
                s.state_constraint(op.key, op.detail)
            elif op.kind == "lift":
                s.lift_constraint(op.key)
            else:
                s.dispose(op.key, op.arg, op.detail)

    def checkpoint(self) -> None:
        self.session.checkpoint()

    def truncate(self, lo: int, hi: int) -> None:
        self.session.truncate(lo, hi, "budget: the summarizer's input limit")

    def compact(self, p: Proposal) -> Node:
        return self.session.compact(**attrs.asdict(p, recurse=False))

    def emit_marker(self, node_id: str) -> str:
        return self.session.emit_marker(node_id).marker_id

    def resume(self, marker_id: str) -> Context:
        return self.session.resume(marker_id)

    def spill_keys(self) -> list[set[str]]:
        """The keys each spill holds, read back checked (once each; none if it fails)."""
        out = []
        for spill in self.state.spills:
            if spill.handle not in self._spills:
                try:
                    data = self.session.read_spill(spill).decode()
                except IntegrityError:
                    data = ""
                self._spills[spill.handle] = held_keys(data)
            out.append(self._spills[spill.handle])
        return out

    def tier_view(self) -> str:
        return self.turns.view(self.state)


class Baseline:
    """A runtime on an ungated journal: commits every compaction, trusts every marker."""

    name = "baseline"

    def __init__(self, config: SessionConfig) -> None:
        self._state = self._fold(SessionState(), SessionStarted(**attrs.asdict(config)))
        self.turns = _Turns()

    @staticmethod
    def _fold(state: SessionState, event: Event) -> SessionState:
        validate(state, event)  # well-formed input only: no C or M rule runs
        return apply(state, event)

    def _add(self, event: Event) -> None:
        self._state = self._fold(self._state, event)

    @property
    def state(self) -> SessionState:
        return self._state

    def append(self, turn: TurnSpec) -> None:
        index = self._state.turns
        self._add(
            TurnAppended(index=index, role=turn.role, content=turn.content, tokens=turn.tokens)
        )
        self.turns.add(turn)
        for op in turn.ops:
            self._add(op_event(op))

    def checkpoint(self) -> None:
        self._add(Checkpointed(at=self._state.end))

    def truncate(self, lo: int, hi: int) -> None:
        self._add(Truncated(lo=lo, hi=hi, reason="budget: the summarizer's input limit"))

    def compact(self, p: Proposal) -> Node:
        node_id = f"n{self._state.version + 1}"
        self._add(
            Compacted(
                node_id=node_id,
                tier=p.tier,
                input_lo=p.input[0],
                input_hi=p.input[1],
                covers_lo=p.covers[0],
                covers_hi=p.covers[1],
                tail_start=p.tail_start,
                summary=p.summary,
                tokens=p.tokens,
                dispositions=p.dispositions,
                resolved_ids=(),
                unresolved_ids=p.unresolved_ids,
                constraints=p.constraints,
                replaces=p.replaces,
            )
        )
        return self._state.nodes[node_id]

    def emit_marker(self, node_id: str) -> str:
        marker_id = f"m{self._state.version + 1}"
        node = self._state.nodes[node_id]
        self._add(
            MarkerEmitted(
                marker_id=marker_id,
                node_id=node_id,
                tier_depth=node.tier,
                resolved_ids=node.resolved_ids,
            )
        )
        return marker_id

    def resume(self, marker_id: str) -> Context:
        data = self.tier_view()
        return Context(
            marker_id=marker_id,
            source="digest",
            content=data,
            sha256=hashlib.sha256(data.encode()).hexdigest(),
            checkpoint_at=None,
            reason="trusted without checks",
            version=self._state.version,
        )

    def spill_keys(self) -> list[set[str]]:
        return []  # it never refuses, so it never spills

    def tier_view(self) -> str:
        return self.turns.view(self._state)


class Retelling(Baseline):
    """The baseline runtime that calls ``retell()`` after each truncation and compaction."""

    name = "retell"

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        self.retells = 0
        self.retold_tokens = 0

    def truncate(self, lo: int, hi: int) -> None:
        super().truncate(lo, hi)
        self.retell()

    def compact(self, p: Proposal) -> Node:
        node = super().compact(p)
        self.retell()
        return node

    def retell(self) -> None:
        """Append one system turn stating what the working context owes, if anything."""
        found = owed(self.state)
        if not found:
            return
        quotes = {o.turn: self.turns.rows[o.turn]["content"] for o in found if o.turn is not None}
        block = write_block(found, quotes)
        spec = TurnSpec(role=ROLE, content=block.text, tokens=estimate_tokens(block.text))
        index = self.state.turns
        self._add(TurnAppended(index=index, role=ROLE, content=spec.content, tokens=spec.tokens))
        self._add(retold_event(index, block, None))
        self.turns.add(spec)
        self.retells += 1
        self.retold_tokens += spec.tokens
