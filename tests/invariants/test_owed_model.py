"""A state machine over the Session API with its own model of evidence.

The model knows nothing of tierlog's state. It remembers each live obligation
(the turn it was raised after, its text or disposition), each summary node it saw
committed (the span it folds, what it lists, and the text each listed constraint
had when it committed: a lift ends that statement), every truncated turn, and what
each re-tell stated on which turn. From that alone it says what the working context
owes: a live obligation whose turn is not resident, that no live node carries (an
open call as UNRESOLVED, a constraint with the text it saw, a fact with its current
disposition) and that no resident re-tell states as it is now. ``owed()`` must name
exactly those, most needed first; after ``retell()`` only what its limit cut.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import eventstore
from eventstore._ops._audit import verify
from tests.helpers import config

CALLS = st.sampled_from(["c0", "c1", "c2"])
KEYS = st.sampled_from(["k0", "k1"])
TEXTS = st.sampled_from(["never touch /etc", "never touch /usr"])
FACTS = st.sampled_from(["plan-a", "plan-b"])
DISPOSITIONS = st.sampled_from(["rejected", "failed", "superseded"])
PICK = st.integers(0, 10_000)
RANK = {"constraint": 0, "open_call": 2}


@attrs.define
class ModelNode:
    """A committed node as the model saw it."""

    lo: int
    hi: int
    unresolved: set[str]
    seen: dict[str, str | None]  # listed constraint -> the text it saw (None: none live)
    dispositions: dict[str, str]
    live: bool = True


class OwedMachine(RuleBasedStateMachine):
    """Random scripts; after every step ``owed()`` is compared with the model's answer."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="tierlog-owed-"))
        self.journal = eventstore.open(self.folder / "m.db", synchronous="normal")
        self.s = self.journal.start_session("m", config(floor_span=1, on_unsafe="spill"))
        self.turns = 0
        self.truncated: set[int] = set()
        self.nodes: dict[str, ModelNode] = {}
        self.calls: dict[str, int] = {}
        self.constraints: dict[str, tuple[str, int]] = {}
        self.facts: dict[str, tuple[str, int]] = {}
        self.told: dict[tuple[str, str], tuple[int, str]] = {}

    def teardown(self) -> None:
        try:  # every re-tell and refusal is re-derived by replay
            assert verify(self.journal) == []
        finally:
            self.journal.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- the model -------------------------------------------------------------------
    def _at(self) -> int:
        return max(self.turns - 1, 0)

    def _resident(self, turn: int) -> bool:
        if turn >= self.turns or turn in self.truncated:
            return False
        return not any(n.live and n.lo <= turn < n.hi for n in self.nodes.values())

    def _told(self, kind: str, key: str, now: str) -> bool:
        found = self.told.get((kind, key))
        return found is not None and found[1] == now and self._resident(found[0])

    def _owed(self) -> set[tuple[str, str]]:
        live = [n for n in self.nodes.values() if n.live]
        out = set()
        for call, turn in self.calls.items():
            carried = any(call in n.unresolved for n in live)
            if not (self._resident(turn) or carried or self._told("open_call", call, "")):
                out.add(("open_call", call))
        for key, (text, turn) in self.constraints.items():
            carried = any(n.seen.get(key, "-") == text for n in live)
            if not (self._resident(turn) or carried or self._told("constraint", key, text)):
                out.add(("constraint", key))
        for key, (disposition, turn) in self.facts.items():
            carried = any(n.dispositions.get(key) == disposition for n in live)
            told = self._told("negative_fact", key, disposition)
            if not (self._resident(turn) or carried or told):
                out.add(("negative_fact", key))
        return out

    def _boundary(self, pick: int) -> int:
        return pick % (self.turns + 1)

    # -- rules -----------------------------------------------------------------------
    @rule()
    def turn(self) -> None:
        self.s.append_turn("user", f"turn {self.turns}", 5)
        self.turns += 1

    @rule(call=CALLS)
    def open_call(self, call: str) -> None:
        try:
            self.s.open_call(call, "tool_call", "grep")
        except eventstore.InvalidEvent:
            return  # each id opens once
        self.calls[call] = self._at()

    @rule(call=CALLS)
    def resolve_call(self, call: str) -> None:
        if call in self.calls:
            self.s.resolve_call(call, "ok")
            del self.calls[call]
            self.told.pop(("open_call", call), None)

    @rule(key=KEYS, text=TEXTS)
    def state_constraint(self, key: str, text: str) -> None:
        self.s.state_constraint(key, text)
        self.constraints[key] = (text, self._at())

    @rule(key=KEYS)
    def lift_constraint(self, key: str) -> None:
        if key in self.constraints:
            self.s.lift_constraint(key)
            del self.constraints[key]
            self.told.pop(("constraint", key), None)
            for node in self.nodes.values():
                if key in node.seen:
                    node.seen[key] = None  # a lift ends the statement the node saw

    @rule(key=FACTS, disposition=DISPOSITIONS)
    def dispose(self, key: str, disposition: str) -> None:
        self.s.dispose(key, disposition, "because")
        self.facts[key] = (disposition, self._at())

    @rule(a=PICK, b=PICK)
    def truncate(self, a: int, b: int) -> None:
        lo, hi = sorted((self._boundary(a), self._boundary(b)))
        if lo < hi:
            self.s.truncate(lo, hi, "budget")
            self.truncated.update(range(lo, hi))

    @rule(a=PICK, b=PICK, carry=PICK, falsely=st.booleans(), replace=st.booleans())
    def compact(self, a: int, b: int, carry: int, falsely: bool, replace: bool) -> None:
        lo, hi = sorted((self._boundary(a), self._boundary(b)))
        if lo == hi:
            return
        calls, keys, facts = (_picked(d, carry) for d in (self.calls, self.constraints, self.facts))
        live = sorted(k for k, n in self.nodes.items() if n.live)
        replaces = live[:1] if replace else []
        refused: list[str] | None = None
        try:
            node = self.s.compact(
                tier=1,
                input=(0, hi),
                covers=(lo, hi),
                tail_start=hi,
                summary="s",
                tokens=2,
                constraints=keys,
                dispositions={k: self.facts[k][0] for k in facts},
                replaces=replaces,
                resolved_ids=calls if falsely else [],
                unresolved_ids=[] if falsely else calls,
            )
        except eventstore.UnrecoverableCompactionError as exc:
            refused = [v.name for v in exc.violations]
        except eventstore.InvalidEvent:
            return
        if refused is not None:  # false_closure exactly when a call was listed as resolved
            assert ("false_closure" in refused) is (falsely and bool(calls)), refused
            return
        assert not (falsely and calls), "a false closure was committed"
        for old in replaces:
            self.nodes[old].live = False
        self.nodes[node.node_id] = ModelNode(
            lo=lo,
            hi=hi,
            unresolved=set(calls),
            seen={k: self.constraints[k][0] for k in keys},
            dispositions={k: self.facts[k][0] for k in facts},
        )

    @rule(limit=st.one_of(st.none(), st.integers(60, 400)))
    def retell(self, limit: int | None) -> None:
        owed = self._owed()
        try:
            told = self.s.retell(limit)
        except eventstore.InvalidArgument:
            assert limit is not None  # only a limit can hold nothing
            return
        if not owed:
            assert told is None
            return
        assert told is not None
        assert {(o.kind, o.key) for o in (*told.told, *told.still_owed)} == owed
        assert len(told.content) <= (limit or len(told.content))
        self.turns += 1
        for o in told.told:
            now = {"constraint": o.text, "negative_fact": o.status}.get(o.kind, "")
            self.told[(o.kind, o.key)] = (told.index, now)
        # only what the limit cut can stay owed (less, when the re-tell is the first turn:
        # obligations raised before any turn are held by it, as by any first turn)
        assert {(o.kind, o.key) for o in self.s.owed()} <= {
            (o.kind, o.key) for o in told.still_owed
        }

    @invariant()
    def owed_is_what_the_model_says(self) -> None:
        found = self.s.owed()
        assert {(o.kind, o.key) for o in found} == self._owed()
        ranks = [RANK.get(o.kind, 3 if o.status == "superseded" else 1) for o in found]
        assert ranks == sorted(ranks)


def _picked(keys: Iterable[str], bits: int) -> list[str]:
    """The sorted keys whose bit is set in ``bits``."""
    return [k for i, k in enumerate(sorted(keys)) if bits >> i & 1]


TestOwedModel = OwedMachine.TestCase
