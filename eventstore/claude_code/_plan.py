"""A Claude Code transcript mapped onto journal steps: turns with their tokens and the
events they raise, and the compact boundaries between them. Pure.

The mapping is the README's ("Auditing real sessions"); every turn's tokens and
events depend only on the transcript up to it, so the plan of a transcript that
has grown since it was read starts with the plan it had then (``_ingest`` appends
the rest). Tokens: an assistant turn gets what its API call's prompt and output
hold beyond the turns before it (``prompt + output - occupancy``: its reply, and
what Claude Code sent that the transcript does not hold, such as the system prompt
and tool definitions on the first call), every other turn 4 characters a token;
each at least 1. After each call, the journal's occupancy is that call's prompt
plus its output whenever the turns before it do not already exceed that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import PurePosixPath

import attrs

from eventstore.claude_code import _transcript as cc
from eventstore.claude_code._attempts import CORRECTION, Attempts, error_line, keyed, what
from eventstore.claude_code._review import boundary_note, preamble
from eventstore.claude_code._rules import Rule, Rules, instructions, named_files
from reducers import (
    CallOpened,
    CallResolved,
    ConstraintStated,
    Event,
    InvalidEvent,
    ItemDisposed,
    Noted,
)

CHARS_PER_TOKEN = 4
OCCUPANCY_GAP = 0.05  # occupancy further than this from preTokens at a boundary is noted
REASON_CHARS = 200


# -- the plan ------------------------------------------------------------------------------
@attrs.define
class Draft:
    """A turn to append and the events it raises; tokens are set by :func:`_spread`."""

    role: str
    content: str
    usage: cc.Usage | None = None
    tokens: int = 0
    raised: list[Event] = attrs.field(factory=list)
    line: int | None = None  # the transcript line it reads (None: a note tierlog writes)

    @property
    def estimate(self) -> int:
        """Tokens by the characters, for turns no usage block accounts for."""
        return estimate(self.content)


@attrs.define
class Retell:
    """A block tierlog's hooks gave the agent, at its transcript line (see ``_ingest``)."""

    line: int
    text: str
    tokens: int = 0

    @property
    def estimate(self) -> int:
        """Tokens by the characters: what the block adds to the context."""
        return estimate(self.text)


Step = Draft | cc.Boundary | Retell


@attrs.define
class Plan:
    """A transcript mapped onto journal steps, with its counts."""

    steps: list[Step] = attrs.field(factory=list)
    warnings: list[str] = attrs.field(factory=list)
    names: dict[str, str] = attrs.field(factory=dict)  # call id -> name
    whats: dict[str, str] = attrs.field(factory=dict)  # call id -> what it attempted
    attempts: Attempts = attrs.field(factory=Attempts)
    rules: Rules = attrs.field(factory=Rules)
    open: set[str] = attrs.field(factory=set)
    last_call: str | None = None  # the last call since the user's last request
    turns: int = 0
    calls: int = 0
    failed: int = 0
    rejected: int = 0
    interruptions: int = 0
    constraints: int = 0
    queued: int = 0
    retells: int = 0
    occupancy: int = 0  # the journal's after the last step
    lead: list[Event] = attrs.field(factory=list)  # notes before the first step (a tail's)

    def counts(self) -> dict[str, int]:
        """What the plan counted, by name (see :data:`COUNTS`)."""
        return {name: getattr(self, name) for name in COUNTS}


COUNTS: tuple[str, ...] = ("turns", "calls", "failed", "rejected", "interruptions")
COUNTS += ("constraints", "queued", "retells")


class Untrusted(Exception):
    """A resume record says what the session's own state does not: the text says how."""


@attrs.frozen(kw_only=True)
class Carried:
    """What planning a transcript's tail needs of the plan of what came before it: the
    calls still open (id: name, what it attempted), the last call since the user's last
    request, failed attempts not resolved yet, the files the user named, the journal's
    occupancy, the counts so far, what the assistant wrote (``said``, read only when
    a rule needs it) and what the user's turns say (``asked``: read, to check
    ``pointed``, only when the tail reads a file it names)."""

    open: dict[str, tuple[str, str]]
    last_call: str | None
    attempts: dict[str, tuple[str, ...]]
    pointed: tuple[str, ...]
    occupancy: int
    counts: dict[str, int]
    said: Callable[[], Iterable[str]] = attrs.field(eq=False, default=tuple)
    asked: Callable[[], Iterable[str]] = attrs.field(eq=False, default=tuple)


def carried(plan: Plan) -> Carried:
    """What planning the tail after ``plan`` needs (see :class:`Carried`)."""
    return Carried(
        open={c: (plan.names[c], plan.whats[c]) for c in sorted(plan.open)},
        last_call=plan.last_call,
        attempts={k: tuple(v) for k, v in plan.attempts.open.items() if v},
        pointed=tuple(sorted(plan.rules.pointed)),
        occupancy=plan.occupancy,
        counts=plan.counts(),
    )


class _Recalled(Rules):
    """Rules whose ``said`` is read when first needed (a tail's: from the journal), and
    whose files the user named before the tail are checked against the journal's user
    turns before the first is used (Untrusted if one is named by none)."""

    def __init__(self, before: Carried) -> None:
        super().__init__(said=[], pointed=set(before.pointed))
        self._recall: Callable[[], Iterable[str]] | None = before.said
        self._asked: Callable[[], Iterable[str]] | None = before.asked
        self._unchecked = frozenset(before.pointed)

    def read(self, path: str, text: str) -> list[Rule]:
        if self._asked is not None and PurePosixPath(path).name in self._unchecked:
            asked, self._asked = self._asked, None
            named = {n for t in asked() for n in named_files(t)}
            if missing := sorted(self._unchecked - named):
                raise Untrusted(f"pointed {missing}, which no user turn of the session names")
        return super().read(path, text)

    def _quoted(self, sentence: str) -> bool:
        if self._recall is not None:
            recall, self._recall = self._recall, None
            for text in recall():
                self.assistant(text)
        return super()._quoted(sentence)


def _resumed(before: Carried) -> Plan:
    plan = Plan(
        attempts=Attempts(open={k: list(v) for k, v in before.attempts.items()}),
        rules=_Recalled(before),
        open=set(before.open),
        last_call=before.last_call,
        occupancy=before.occupancy,
    )
    plan.names = {c: name for c, (name, _) in before.open.items()}
    plan.whats = {c: what for c, (_, what) in before.open.items()}
    for name, count in before.counts.items():
        setattr(plan, name, count)
    return plan


def build_plan(transcript: cc.Transcript, before: Carried | None = None) -> Plan:
    """Turns with their tokens and raised events, and the boundaries between them. Pure.
    ``before``: the transcript is the tail of one planned before (see :class:`Carried`)."""
    plan = Plan() if before is None else _resumed(before)
    if before is None:
        plan.steps.append(Draft(role="system", content=preamble(transcript.session_id)))
    turns = plan.turns
    notes = list(transcript.notes)
    for item in transcript.items:
        notes = _place(plan, notes, item.line)
        if isinstance(item, cc.Boundary):
            item = attrs.evolve(item, kept=_kept(plan.steps, item.kept_from))
            note = boundary_note(item.line, item.trigger, item.pre_tokens, item.kept)
            plan.steps += [item, Draft(role="system", content=note)]
        elif isinstance(item, cc.Message) and item.role == "retell":
            plan.retells += 1
            plan.steps.append(Retell(line=item.line, text=cc.text_of(item.blocks)))
        elif isinstance(item, cc.Queued):
            plan.queued += 1
            draft = Draft(role="user", content=item.text, line=item.line)
            _stated(plan, draft, plan.rules.typed(item.text))
            plan.steps.append(draft)
        else:
            try:
                plan.steps.append(_plan_message(plan, item))
            except InvalidEvent as exc:  # a value no event takes: name its line
                raise InvalidEvent(f"line {item.line}: {exc}") from None
    _place(plan, notes, None)
    plan.occupancy = _assign_tokens(plan.steps, plan.occupancy)
    plan.turns = turns + sum(isinstance(s, Draft) for s in plan.steps)
    return plan


def _kept(steps: Sequence[Step], kept_from: int | None) -> int:
    """How many of the last turns read lines from ``kept_from`` on (none before the last
    compaction's note): the turns Claude Code kept verbatim after the summary."""
    kept = 0
    for step in reversed(steps):
        if kept_from is None or not isinstance(step, Draft):
            break
        if step.line is None or step.line < kept_from:
            break
        kept += 1
    return kept


def _place(plan: Plan, notes: list[cc.Note], line: int | None) -> list[cc.Note]:
    """Record the notes before ``line`` (all: ``None``) after the last turn so far; the
    notes still to place."""
    cut = (
        len(notes)
        if line is None
        else next((i for i, n in enumerate(notes) if n.line >= line), len(notes))
    )
    last = next((s for s in reversed(plan.steps) if isinstance(s, Draft)), None)
    raised = last.raised if last is not None else plan.lead  # a tail's first notes
    raised += [_noted(n.kind, n.line, n.text, n.count) for n in notes[:cut]]
    return notes[cut:]


def _noted(kind: str, line: int, text: str, count: int = 1) -> Noted:
    return Noted(kind=kind, text=text, line=line, count=count)


def _plan_message(plan: Plan, m: cc.Message) -> Draft:
    """One message as a turn. A ``tool_use`` opens a call named by its tool and short key;
    its ``tool_result`` resolves it, and an error result is a negative fact on that name:
    ``rejected`` when the user refused the call, ``failed`` otherwise. A user's
    "[Request interrupted by user" is a ``rejected`` fact on what it interrupted, and a
    sentence the user typed with never/do not/don't/always/must/only a pending rule."""
    role = "system" if m.role == "instructions" else m.role
    draft = Draft(role=role, content=render(m.blocks), usage=m.usage, line=m.line)
    if m.typed:
        _correction(plan, draft, m)
        plan.last_call = None  # a new request: an interruption from now on is of its work
    for b in m.blocks:
        if isinstance(b, cc.ToolUse):
            _open(plan, draft, b, m.line)
        elif isinstance(b, cc.ToolResult):
            _result(plan, draft, b, m.line)
        elif b.kind == "text" and m.role == "user" and cc.INTERRUPTED_TEXT in b.text:
            plan.interruptions += 1
            key = keyed(f"interrupted: {plan.last_call or 'reply'}", m.line)
            reason = f"line {m.line}: {b.text.strip()}"
            draft.raised.append(ItemDisposed(key=key, disposition="rejected", reason=reason))
    text = "\n".join(b.text for b in m.blocks if isinstance(b, cc.Text) and b.kind == "text")
    if m.typed:
        _stated(plan, draft, plan.rules.typed(text))
    elif m.role in ("instructions", "user") and "Contents of " in text:
        _stated(plan, draft, list(instructions(text)))
    elif m.role == "assistant":
        plan.rules.assistant(text)
    return draft


def _open(plan: Plan, draft: Draft, b: cc.ToolUse, line: int) -> None:
    if b.id in plan.names:
        text = f"tool_use {b.id} appears twice; the first counts"
        plan.warnings.append(f"line {line}: {text}")
        draft.raised.append(_noted("bad_value", line, text))
        return
    name = f"{b.name}: {b.key}" if b.key else b.name
    plan.names[b.id] = plan.last_call = name
    plan.whats[b.id] = what(b.name, b.key, b.input)
    plan.open.add(b.id)
    plan.calls += 1
    draft.raised.append(CallOpened(call_id=b.id, kind="tool_call", name=name))


def _result(plan: Plan, draft: Draft, b: cc.ToolResult, line: int) -> None:
    if b.tool_use_id not in plan.open:
        text = f"tool_result for {b.tool_use_id}, which is not an open call: ignored"
        plan.warnings.append(f"line {line}: {text}")
        draft.raised.append(_noted("bad_value", line, text))
        return
    plan.open.discard(b.tool_use_id)
    outcome = "rejected" if b.rejected else "error" if b.is_error else "ok"
    draft.raised.append(CallResolved(call_id=b.tool_use_id, outcome=outcome))
    subject = plan.whats[b.tool_use_id]
    if not b.is_error:
        draft.raised += plan.attempts.succeeded(subject, line)
        if subject.startswith("Read: "):
            _stated(plan, draft, plan.rules.read(subject.removeprefix("Read: "), b.text))
        return
    plan.rejected += b.rejected
    plan.failed += not b.rejected
    disposition = "rejected" if b.rejected else "failed"
    draft.raised.append(plan.attempts.failed(subject, line, disposition, error_line(b.text)))


def _correction(plan: Plan, draft: Draft, m: cc.Message) -> None:
    """Typed text that turns the agent back ("No, ...", "Stop", "Nein, ...") is a user
    correction: a ``rejected`` fact on what the agent did last, quoting the text."""
    text = " ".join(cc.text_of(m.blocks).split())
    if CORRECTION.match(text):
        key = keyed(f"corrected: {plan.last_call or 'reply'}", m.line)
        quote = text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."
        reason = f"line {m.line}: {quote}"
        draft.raised.append(ItemDisposed(key=key, disposition="rejected", reason=reason))


def _stated(plan: Plan, draft: Draft, rules: list[Rule]) -> None:
    """Rules found (see ``_rules``) as pending constraints."""
    plan.constraints += len(rules)
    draft.raised += [ConstraintStated(key=r.key, text=r.text) for r in rules]


def render(blocks: Sequence[cc.Block]) -> str:
    """A message's blocks as the turn's text."""
    parts = []
    for b in blocks:
        if isinstance(b, cc.ToolUse):
            parts.append(f"[tool_use {b.id}] {b.name} {b.input}")
        elif isinstance(b, cc.ToolResult):
            flag = " rejected" if b.rejected else " error" if b.is_error else ""
            parts.append(f"[tool_result {b.tool_use_id}{flag}] {b.text}")
        elif b.kind == "text":
            parts.append(b.text)
        else:
            parts.append(f"[{b.kind}] {b.text}".rstrip())
    return "\n".join(parts)


# -- tokens ------------------------------------------------------------------------------
def _assign_tokens(steps: Sequence[Step], occupancy: int = 0) -> int:
    """Give every draft and re-tell its tokens (see the module doc); the occupancy after
    them, from ``occupancy`` before. Occupancy is tracked as the journal computes it: a
    compaction leaves its summary's estimate."""
    for at, step in enumerate(steps):
        if isinstance(step, cc.Boundary):
            gap = _gap(step, occupancy)
            if gap is not None:
                note = steps[at + 1]
                assert isinstance(note, Draft)  # build_plan puts it there
                note.raised.append(gap)
            occupancy = estimate(step.summary)
            continue
        if isinstance(step, Retell) or step.usage is None:
            step.tokens = step.estimate
        else:
            step.tokens = max(1, step.usage.prompt + step.usage.output - occupancy)
        occupancy += step.tokens
    return occupancy


def _gap(b: cc.Boundary, occupancy: int) -> Noted | None:
    """A note when the occupancy before ``b`` is more than 5% away from its preTokens."""
    pre = b.pre_tokens
    if not pre or abs(occupancy - pre) <= OCCUPANCY_GAP * pre:
        return None
    return _noted(
        "occupancy_gap",
        b.line,
        f"occupancy {occupancy:,} before the compaction is {(occupancy - pre) / pre:+.1%}"
        f" from preTokens {pre:,} (more than 5%): turns before it may be missing or miscounted",
    )


def estimate(text: str) -> int:
    """Tokens of ``text`` where no usage block says: 4 characters a token, at least 1."""
    return max(1, len(text) // CHARS_PER_TOKEN)
