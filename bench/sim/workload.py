"""Seeded session scripts: what the user, the assistant and the tools say, and when.

A script is the same for both arms and every drop rate: the arms differ only in
what their runtime does with it. Every obligation's key is written into the
content of the turn that raises it, as a real transcript would name it.
"""

from __future__ import annotations

import math
import random
import re

import attrs

#: Obligation keys: ``con-0007`` (constraint), ``call-0012`` (call), ``neg-0003`` (negative fact).
KEY = re.compile(r"\b(?:con|call|neg)-\d{4}\b")
MAX_KEYS = 10_000  # four digits per kind
MAX_TOOL_TOKENS = 16_000


@attrs.frozen(kw_only=True)
class Op:
    """One obligation event applied right after its turn is appended."""

    kind: str  # open | resolve | state | lift | dispose
    key: str
    detail: str  # call name, outcome, constraint text or reason
    arg: str = ""  # call kind for open, disposition for dispose


@attrs.frozen(kw_only=True)
class TurnSpec:
    """One L0 turn of a script, the obligations it raises, and what happens around it."""

    role: str
    content: str
    tokens: int
    ops: tuple[Op, ...] = ()
    exchange_start: bool = False  # the runtime checkpoints before this turn
    crash_after: bool = False  # the runtime crashes after it and resumes


@attrs.frozen(kw_only=True)
class Shape:
    """How long a session runs and how often it crashes."""

    tokens: int
    crashes: int


@attrs.frozen(kw_only=True)
class Script:
    """A whole session: its seed and its turns."""

    seed: int
    turns: tuple[TurnSpec, ...]

    @property
    def tokens(self) -> int:
        """Tokens of every turn."""
        return sum(t.tokens for t in self.turns)


def lognormal(rng: random.Random, median: float, sigma: float, lo: int, hi: int) -> int:
    """A heavy-tailed token count with ``median``, clipped to ``[lo, hi]``."""
    return max(lo, min(hi, round(rng.lognormvariate(math.log(median), sigma))))


class _Writer:
    """Builds one script turn by turn; private to :func:`generate`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.turns: list[TurnSpec] = []
        self.counts = {"con": 0, "call": 0, "neg": 0}
        self.pending: list[str] = []  # constraint keys not lifted
        self.plans = 0  # approaches proposed and not yet disposed of
        self.waiting: list[tuple[int, str]] = []  # (due turn, call id) long-running calls
        self.tokens = 0

    def key(self, kind: str) -> str:
        n = self.counts[kind]
        if n >= MAX_KEYS:
            raise ValueError(f"more than {MAX_KEYS} {kind} keys in one session")
        self.counts[kind] = n + 1
        return f"{kind}-{n:04d}"

    def add(
        self, role: str, content: str, tokens: int, ops: tuple[Op, ...] = (), **kw: bool
    ) -> None:
        self.turns.append(TurnSpec(role=role, content=content, tokens=tokens, ops=ops, **kw))
        self.tokens += tokens

    def exchange(self) -> None:
        """A user turn, the assistant's plan, tool calls, and a wrap-up."""
        self.user_turn()
        self.plan_turn()
        rng = self.rng
        heavy = rng.random() < 0.15
        calls = rng.randint(8, 30) if heavy else (0 if rng.random() < 0.3 else rng.randint(1, 5))
        for _ in range(calls):
            self.tool_call(heavy)
        self.wrap_up()

    def user_turn(self) -> None:
        rng = self.rng
        ops: list[Op] = []
        words = ["user asks for the next step"]
        if rng.random() < 0.15:
            key = self.key("con")
            ops.append(Op(kind="state", key=key, detail=f"rule {key}"))
            self.pending.append(key)
            words.append(f"and sets a rule: never do {key}")
        if self.pending and rng.random() < 0.04:
            key = self.pending.pop(rng.randrange(len(self.pending)))
            ops.append(Op(kind="lift", key=key, detail=""))
            words.append(f"and lifts rule {key}")
        if self.plans and rng.random() < 0.12:
            op = self.dispose_plan("rejected", "the user rejected it")
            ops.append(op)
            words.append(f"and rejects approach {op.key}")
        tokens = lognormal(rng, 150, 0.9, 10, 4_000)
        self.add("user", " ".join(words), tokens, tuple(ops), exchange_start=True)

    def dispose_plan(self, disposition: str, reason: str) -> Op:
        """A negative fact about an open plan; its key is minted here."""
        self.plans -= 1
        key = self.key("neg")
        return Op(kind="dispose", key=key, detail=reason, arg=disposition)

    def plan_turn(self) -> None:
        if self.rng.random() < 0.35:
            self.plans += 1
        self.add("assistant", "assistant proposes a plan", lognormal(self.rng, 400, 0.7, 20, 6_000))

    def tool_call(self, heavy: bool) -> None:
        rng = self.rng
        call = self.key("call")
        long_running = rng.random() < 0.06
        kind = rng.choice(("subprocess", "file_handle")) if long_running else "tool_call"
        opened = Op(kind="open", key=call, detail=f"run {call}", arg=kind)
        self.add(
            "assistant", f"assistant starts {call}", lognormal(rng, 60, 0.5, 5, 600), (opened,)
        )
        if long_running:
            if rng.random() < 0.7:
                self.waiting.append((len(self.turns) + rng.randint(20, 200), call))
            self.tool_result(f"{call} is running in the background", heavy, ())
            return
        ops, words = [Op(kind="resolve", key=call, detail="ok")], [f"{call} returned"]
        if rng.random() < 0.10:
            neg = self.key("neg")
            ops.append(Op(kind="dispose", key=neg, detail=f"{call} failed", arg="failed"))
            words.append(f"an error: approach {neg} failed")
        self.tool_result(" ".join(words), heavy, tuple(ops))

    def tool_result(self, text: str, heavy: bool, ops: tuple[Op, ...]) -> None:
        due = [c for at, c in self.waiting if at <= len(self.turns)]
        self.waiting = [(at, c) for at, c in self.waiting if c not in due]
        done = tuple(Op(kind="resolve", key=c, detail="finished") for c in due)
        words = [text, *(f"background {c} finished" for c in due)]
        tokens = lognormal(self.rng, 3_000 if heavy else 700, 1.1, 5, MAX_TOOL_TOKENS)
        self.add("tool", "; ".join(words), tokens, ops + done)

    def wrap_up(self) -> None:
        ops: tuple[Op, ...] = ()
        text = "assistant reports back"
        if self.plans and self.rng.random() < 0.08:
            op = self.dispose_plan("superseded", "a better plan replaced it")
            ops, text = (op,), f"assistant drops approach {op.key}: superseded"
        self.add("assistant", text, lognormal(self.rng, 300, 0.8, 10, 4_000), ops)


def generate(seed: int, shape: Shape) -> Script:
    """The script of session ``seed``: exchanges until ``shape.tokens``, then crash points."""
    rng = random.Random(seed)
    w = _Writer(rng)
    while w.tokens < shape.tokens:
        w.exchange()
    turns = w.turns
    first = len(turns) // 5
    picks = sorted(rng.sample(range(first, len(turns)), min(shape.crashes, len(turns) - first)))
    for i in picks:
        turns[i] = attrs.evolve(turns[i], crash_after=True)
    return Script(seed=seed, turns=tuple(turns))
