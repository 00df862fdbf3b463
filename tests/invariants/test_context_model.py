"""A state machine over the whole Session API with its own model of live obligations.

The model knows nothing of tierlog's state: it remembers which calls are open,
which constraints pending and which disposition each key has now, and the turn
each was raised after. On every resume it reads the returned context as a
runtime would (summary lines and turn lines) and checks that each live
obligation is in it: carried by a summary, or held by its turn. No resume, from
a trusted digest or a raw fallback, may lack one.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import eventstore
from eventstore._ops._audit import verify
from tests.helpers import config

CALLS = st.sampled_from(["c0", "c1", "c2"])
KEYS = st.sampled_from(["k0", "k1"])
FACTS = st.sampled_from(["plan-a", "plan-b"])
PICK = st.integers(0, 10_000)


@attrs.frozen
class Obligation:
    """What the model remembers of a live obligation."""

    turn: int  # the turn it was raised after (turn 0 when raised before any)
    disposition: str | None = None


def _present(kind: str, key: str, ob: Obligation, lines: list[dict[str, Any]]) -> bool:
    for line in lines:  # raw contexts hold bare turns; digests tag each line's kind
        kind_of_line = line.get("kind", "turn")
        if kind_of_line == "turn" and line["index"] == ob.turn:
            return True
        if kind_of_line != "summary":
            continue
        if kind == "call" and key in (*line["resolved_ids"], *line["unresolved_ids"]):
            return True
        if kind == "constraint" and key in line["constraints"]:
            return True
        if kind == "fact" and line["dispositions"].get(key) == ob.disposition:
            return True
    return False


class ContextMachine(RuleBasedStateMachine):
    """Random scripts of API calls; every resume is judged against the model."""

    unit = "turns"

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="tierlog-model-"))
        self.journal = eventstore.open(self.folder / "m.db", synchronous="normal")
        unit = self.unit
        span = 2 if unit == "turns" else 20
        self.s = self.journal.start_session(
            "m", config(truncator_unit=unit, floor_unit=unit, floor_span=span)
        )
        self.live: dict[tuple[str, str], Obligation] = {}
        self.turns = 0
        self.digest_resumes = 0

    def teardown(self) -> None:
        try:  # every invalidation and resume is re-derived by replay
            assert verify(self.journal) == []
        finally:
            self.journal.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------
    def _boundary(self, pick: int) -> int:
        state = self.s.state
        t = pick % (state.turns + 1)
        return state.position_of_turn(t) if t < state.turns else state.end

    def _raise(self, kind: str, key: str, disposition: str | None = None) -> None:
        self.live[(kind, key)] = Obligation(max(self.turns - 1, 0), disposition)

    # -- rules -----------------------------------------------------------------------
    @rule(tokens=st.integers(0, 15))
    def turn(self, tokens: int) -> None:
        self.s.append_turn("user", f"turn {self.turns}", tokens if self.unit == "tokens" else 5)
        self.turns += 1

    @rule(call=CALLS)
    def open_call(self, call: str) -> None:
        try:
            self.s.open_call(call, "tool_call", "grep")
        except eventstore.InvalidEvent:
            return  # each id opens once
        self._raise("call", call)

    @rule(call=CALLS)
    def resolve_call(self, call: str) -> None:
        if ("call", call) in self.live:
            self.s.resolve_call(call, "ok")
            del self.live[("call", call)]

    @rule(key=KEYS)
    def state_constraint(self, key: str) -> None:
        self.s.state_constraint(key, f"rule {key}")
        self._raise("constraint", key)

    @rule(key=KEYS)
    def lift_constraint(self, key: str) -> None:
        if ("constraint", key) in self.live:
            self.s.lift_constraint(key)
            del self.live[("constraint", key)]

    @rule(key=FACTS, disposition=st.sampled_from(["rejected", "failed", "superseded"]))
    def dispose(self, key: str, disposition: str) -> None:
        self.s.dispose(key, disposition, "because")
        self._raise("fact", key, disposition)

    @rule(a=PICK, b=PICK)
    def truncate(self, a: int, b: int) -> None:
        lo, hi = sorted((self._boundary(a), self._boundary(b)))
        if lo < hi:
            self.s.truncate(lo, hi, "budget")

    @rule()
    def checkpoint(self) -> None:
        self.s.checkpoint()

    @rule(a=PICK, b=PICK, tier=st.sampled_from([1, 2]), carry=PICK, replace=st.booleans())
    def compact(self, a: int, b: int, tier: int, carry: int, replace: bool) -> None:
        state = self.s.state
        lo, hi = sorted((self._boundary(a), self._boundary(b)))
        if lo == hi:
            return
        bits = [(carry >> i) & 1 for i in range(len(self.live))]
        chosen = [k for k, bit in zip(sorted(self.live), bits, strict=False) if bit or carry < 5000]
        live = [n.node_id for n in state.live_nodes]
        with contextlib.suppress(eventstore.UnrecoverableCompactionError, eventstore.InvalidEvent):
            self.s.compact(
                tier=tier,
                input=(0, hi),
                covers=(lo, hi),
                tail_start=hi,
                summary="s",
                tokens=2,
                unresolved_ids=[key for kind, key in chosen if kind == "call"],
                constraints=[key for kind, key in chosen if kind == "constraint"],
                dispositions={
                    key: d
                    for (kind, key) in chosen
                    if kind == "fact" and (d := self.live[(kind, key)].disposition)
                },
                replaces=live[:1] if replace else [],
            )

    @precondition(lambda self: bool(self.s.state.nodes))
    @rule(pick=PICK)
    def emit_marker(self, pick: int) -> None:
        nodes = sorted(self.s.state.nodes)
        with contextlib.suppress(eventstore.MarkerInvalid):  # a refusal is recorded
            self.s.emit_marker(nodes[pick % len(nodes)])

    @precondition(lambda self: bool(self.s.state.markers))
    @rule(pick=PICK)
    def resume(self, pick: int) -> None:
        markers = sorted(self.s.state.markers)
        ctx = self.s.resume(markers[pick % len(markers)])
        lines = [json.loads(line) for line in ctx.content.splitlines()]
        missing = [k for k, ob in self.live.items() if not _present(k[0], k[1], ob, lines)]
        assert not missing, f"{ctx.source} resume lacks live {missing}: {ctx.reason}"
        self.digest_resumes += ctx.source == "digest"

    @invariant()
    def model_agrees_on_what_is_live(self) -> None:
        state = self.s.state
        assert {k for kind, k in self.live if kind == "call"} == set(state.open_calls)
        assert {k for kind, k in self.live if kind == "constraint"} == set(state.constraints)


class TurnUnitMachine(ContextMachine):
    unit = "turns"


class TokenUnitMachine(ContextMachine):
    unit = "tokens"


TestTurnUnit = TurnUnitMachine.TestCase
TestTokenUnit = TokenUnitMachine.TestCase
