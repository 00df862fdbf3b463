"""A Codex rollout mapped onto journal steps: turns with their tokens and the events
they raise, and the compactions between them (the shape of the Claude Code ingest's
plan; an integration reaches no other, so these are this package's own values). Pure.

The mapping follows Claude Code's: a message is a turn (``developer`` text a
``system`` turn); a tool call is an ``assistant`` turn that opens a call named by
its tool and its command's head (``shell: git push``); its output is a ``tool``
turn that resolves it, and a failed one is a ``failed`` negative fact on that name.
Failure is read from the exit code Codex's ``exec_command_end`` / ``item_completed``
event gives, else from the output's own text (a note says so). A ``turn_aborted`` is
a ``rejected`` fact on the call (or reply) it interrupted. A sentence the user typed
with never / do not / always / must / only is a pending rule. Each ``compacted`` item is
a tier-1 compaction whose summary is what Codex resumed from: the texts it kept in
``replacement_history`` (the user's messages and the summary), else its message.
Tokens: a ``token_count`` gives the last call's prompt and output; the last model
turn before it gets what they hold beyond the turns before it, every other turn
4 characters a token (Claude Code's rule).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TypeAlias

import attrs

from eventstore._ops import stated_rules
from eventstore.codex._values import (
    Aborted,
    Call,
    Compaction,
    Message,
    Note,
    Output,
    Reasoning,
    Rollout,
    Usage,
)
from reducers import (
    CallOpened,
    CallResolved,
    Event,
    InvalidEvent,
    ItemDisposed,
    Noted,
)

REASON_CHARS = 200
KEY_CHARS = 60
CHARS_PER_TOKEN = 4
_PREFIX = re.compile(r"^(?:\s*(?:cd\s+\S+\s*&&|[A-Za-z_][A-Za-z0-9_]*=\S*)\s*)+")
_STOP = re.compile(r"\s(?:\||&&|\|\||;|\d?>>?|<)|[;|]")
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9._:-]*")
PREAMBLE = (
    "[codex rollout {session_id}] Codex CLI {cli_version}. The base instructions and tool"
    " definitions Codex sent with every API call: not in the rollout; their tokens are"
    " counted in the first call's turn."
)
NOTE_PREFIX = "[codex compacted] "
ROLES = {"user": "user", "assistant": "assistant", "developer": "system", "system": "system"}
INPUT_NOTE = (
    "the rollout does not say which items Codex's summarisation request held (it drops"
    " the oldest when the request overflows): the compaction's input is taken as"
    " everything before it"
)


@attrs.define
class Turn:
    """A turn to append and the events it raises; ``usage`` is the prompt and output of
    the API call that wrote it, when a ``token_count`` priced it."""

    role: str
    content: str
    line: int = 0  # the rollout line it comes from (0: the preamble)
    tokens: int = 0
    usage: int | None = None
    raised: list[Event] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class Boundary:
    """A ``compacted`` item: the summary Codex resumed from, and the occupancy before."""

    line: int
    summary: str
    occupancy: int | None


Step: TypeAlias = Turn | Boundary


@attrs.define
class Plan:
    """A rollout mapped onto journal steps, with its counts."""

    steps: list[Step] = attrs.field(factory=list)
    names: dict[str, str] = attrs.field(factory=dict)  # call id -> name
    open: set[str] = attrs.field(factory=set)
    last_call: str | None = None  # the last call since the user's last request
    turns: int = 0
    calls: int = 0
    failed: int = 0
    interruptions: int = 0
    constraints: int = 0


@attrs.frozen(kw_only=True)
class Mapped:
    """A rollout's plan and every note made reading and mapping it, in line order."""

    session_id: str
    plan: Plan
    notes: tuple[Note, ...]
    window: int | None  # the model's context window, as token_count reports it


@attrs.define
class _Mapping:
    plan: Plan
    notes: list[Note]
    model_turn: Turn | None = None  # the last model turn no token_count has priced yet
    from_text: list[int] = attrs.field(factory=list)  # outputs judged by their text
    roles: dict[str, list[int]] = attrs.field(factory=dict)  # role read as system -> lines


def build_plan(rollout: Rollout) -> Mapped:
    """Turns with their tokens and raised events, and the compactions between them."""
    m = _Mapping(plan=Plan(), notes=list(rollout.notes))
    preamble = PREAMBLE.format(session_id=rollout.session_id, cli_version=rollout.cli_version)
    m.plan.steps.append(Turn(role="system", content=preamble))
    for item in rollout.items:
        try:
            _step(m, item)
        except InvalidEvent as exc:  # a value no event takes: name its line
            raise InvalidEvent(f"line {item.line}: {exc}") from None
    _assign_tokens(m.plan.steps)
    m.plan.turns = sum(isinstance(s, Turn) for s in m.plan.steps)
    _fold_notes(m)
    notes = sorted(m.notes, key=lambda n: n.line or 0)
    _place(m.plan.steps, notes)
    windows = [i.window for i in rollout.items if isinstance(i, Usage) and i.window]
    return Mapped(
        session_id=rollout.session_id,
        plan=m.plan,
        notes=tuple(notes),
        window=max(windows, default=None),
    )


def _fold_notes(m: _Mapping) -> None:
    """The guesses made item by item, one note per kind of guess, with how many."""
    if m.from_text:
        text = "a call's outcome read from its output text (no exit-code event)"
        m.notes.append(
            Note(kind="outcome_from_text", text=text, line=m.from_text[0], count=len(m.from_text))
        )
    for role, at in m.roles.items():
        text = f"a message of role {role!r}, which Codex does not write: read as system"
        m.notes.append(Note(kind="unknown_role", text=text, line=at[0], count=len(at)))


def _place(steps: Sequence[Step], notes: Sequence[Note]) -> None:
    """Record each note as a ``Noted`` event after the last turn read before its line."""
    turns = [s for s in steps if isinstance(s, Turn)]
    for note in notes:
        at = next((t for t in reversed(turns) if t.line <= (note.line or 0)), turns[0])
        at.raised.append(Noted(kind=note.kind, text=note.text, line=note.line, count=note.count))


def _step(m: _Mapping, item: object) -> None:
    if isinstance(item, Message):
        _message(m, item)
    elif isinstance(item, Reasoning):
        m.model_turn = _add(m, "assistant", f"[reasoning] {item.text}", item.line)
    elif isinstance(item, Call):
        _call(m, item)
    elif isinstance(item, Output):
        _output(m, item)
    elif isinstance(item, Usage):
        _usage(m, item)
    elif isinstance(item, Aborted):
        _aborted(m, item)
    elif isinstance(item, Compaction):
        _compaction(m, item)


def _add(m: _Mapping, role: str, content: str, line: int) -> Turn:
    draft = Turn(role=role, content=content, line=line)
    m.plan.steps.append(draft)
    return draft


def _message(m: _Mapping, item: Message) -> None:
    if item.role not in ROLES:
        m.roles.setdefault(item.role, []).append(item.line)
    draft = _add(m, ROLES.get(item.role, "system"), item.text, item.line)
    if item.role == "assistant":
        m.model_turn = draft
    if item.typed:
        m.plan.last_call = None  # a new request: an interruption from now on is of its work
        draft.raised += stated_rules(item.text)
        m.plan.constraints += len(draft.raised)


def _call(m: _Mapping, item: Call) -> None:
    draft = _add(m, "assistant", f"[{item.name} {item.call_id}] {item.arguments}", item.line)
    m.model_turn = draft
    if item.call_id in m.plan.names:
        text = f"call {item.call_id} appears twice; the first counts"
        m.notes.append(Note(kind="duplicate_call", text=text, line=item.line))
        return
    head = command_head(item.command) if item.command else ""
    name = f"{item.name}: {head}" if head else item.name
    m.plan.names[item.call_id] = m.plan.last_call = name
    m.plan.open.add(item.call_id)
    m.plan.calls += 1
    draft.raised.append(CallOpened(call_id=item.call_id, kind="tool_call", name=name))


def _output(m: _Mapping, item: Output) -> None:
    flag = " failed" if item.failed else ""
    draft = _add(m, "tool", f"[output {item.call_id}{flag}] {item.text}", item.line)
    if item.call_id not in m.plan.open:
        text = f"output for {item.call_id}, which is not an open call: no call resolved"
        m.notes.append(Note(kind="orphan_output", text=text, line=item.line))
        return
    m.plan.open.discard(item.call_id)
    draft.raised.append(
        CallResolved(call_id=item.call_id, outcome="error" if item.failed else "ok")
    )
    if item.source == "output_text":
        m.from_text.append(item.line)
    if item.failed:
        m.plan.failed += 1
        code = f"exit code {item.exit_code}: " if item.exit_code is not None else ""
        body = item.text.split("Output:\n", 1)[-1]  # past Codex's header (chunk, wall time)
        reason = f"line {item.line}: {code}{' '.join(body.split())}"[:REASON_CHARS]
        name = m.plan.names[item.call_id]
        draft.raised.append(ItemDisposed(key=name, disposition="failed", reason=reason))


def _usage(m: _Mapping, item: Usage) -> None:
    """Price the last model turn by this call's prompt and output (a count of 0, as
    Codex writes right after a compaction, prices nothing)."""
    if m.model_turn is None or item.prompt == 0:
        return
    m.model_turn.usage = item.prompt + item.output
    m.model_turn = None


def _aborted(m: _Mapping, item: Aborted) -> None:
    m.plan.interruptions += 1
    draft = _add(m, "system", f"[codex turn_aborted] {item.reason}", item.line)
    key = f"interrupted: {m.plan.last_call or 'reply'}"
    reason = f"line {item.line}: turn aborted ({item.reason or 'no reason given'})"
    draft.raised.append(ItemDisposed(key=key, disposition="rejected", reason=reason))


def _compaction(m: _Mapping, item: Compaction) -> None:
    summary = "\n\n".join(item.kept) if item.kept else item.message
    occupancy = _occupancy(m.plan.steps)
    m.plan.steps.append(Boundary(line=item.line, summary=summary, occupancy=occupancy))
    m.notes.append(Note(kind="compaction_input", text=INPUT_NOTE, line=item.line))
    fields = {"kept": None if item.kept is None else len(item.kept), "line": item.line}
    _add(m, "system", NOTE_PREFIX + json.dumps(fields, sort_keys=True), item.line)
    m.model_turn = None


def _occupancy(steps: list[Step]) -> int | None:
    """The last priced call's prompt and output before a compaction, if any."""
    for step in reversed(steps):
        if isinstance(step, Boundary):
            return None
        if step.usage is not None:
            return step.usage
    return None


def _assign_tokens(steps: Sequence[Step]) -> None:
    """Give every turn its tokens (see the module doc); a compaction leaves its
    summary's estimate, as the journal counts it."""
    occupancy = 0
    for step in steps:
        if isinstance(step, Boundary):
            occupancy = estimate(step.summary)
            continue
        step.tokens = (
            estimate(step.content) if step.usage is None else max(1, step.usage - occupancy)
        )
        occupancy += step.tokens


def estimate(text: str) -> int:
    """Tokens of ``text`` no ``token_count`` accounts for: 4 characters a token, at least 1."""
    return max(1, len(text) // CHARS_PER_TOKEN)


def command_head(command: str) -> str:
    """A shell command's first word, and its subcommand if it has one (``git push``)."""
    first = command.strip().splitlines()[0] if command.strip() else ""
    words = _STOP.split(_PREFIX.sub("", first), maxsplit=1)[0].split()
    if not words:
        return ""
    head = words[:2] if len(words) > 1 and _SUBCOMMAND.fullmatch(words[1]) else words[:1]
    return " ".join(head)[:KEY_CHARS]
