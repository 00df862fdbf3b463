"""LangChain messages as journal turns and the obligations they raise. Pure.

A human message is a ``user`` turn, and each of its sentences that states a rule
(never, do not, always, must, only...) a pending constraint keyed ``heuristic: ...``,
as in Claude Code ingest. An AI message is an ``assistant`` turn; each tool call it
makes opens a call named by its tool and first argument. A tool message resolves its
call: ``status="error"`` is a negative fact on the call's name, ``rejected`` when a
human-in-the-loop decision refused the call, ``failed`` otherwise. A message
``additional_kwargs["tierlog_rule"]`` names is a rule whatever its words.

What the journal cannot take as it is, the gate repairs or skips, and a ``Noted``
event after the turn says so: a lone surrogate (a file name read with
``surrogateescape``) becomes U+FFFD; a call id used before (a provider numbering
calls per turn, a restarted gate journaling its thread again) is not opened twice;
a result for a call never seen resolves nothing; a ``tierlog_rule`` that is not a
non-empty string is passed over for the sentence heuristic.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Iterable, Iterator, Mapping
from typing import Any

import attrs
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from eventstore._ops import stated_rules
from reducers import CallOpened, CallResolved, ConstraintStated, Event, ItemDisposed, Noted

REASON_CHARS = 200
ARG_CHARS = 60
_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str, only a lone one is left
_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
_REPAIRED = ("content", "tool_calls", "tool_call_id", "name", "additional_kwargs")
HITL_SOURCE = "hitl_interrupt_decision"
SUMMARY_SOURCE = "summarization"
REUSED = (
    "tool call id {call_id!r} was opened before in this session (reused by the model, or"
    " a restarted gate journaling its thread again): not opened again"
)
ORPHAN = "a result for call {call_id!r}, which the gate never saw: no call resolved"


@attrs.frozen(kw_only=True)
class Entry:
    """One message as a turn and the events it raises after it."""

    role: str
    content: str
    raised: tuple[Event, ...]


@attrs.define
class Calls:
    """The calls a batch of turns may open and resolve: the session's, then the batch's.

    ``names`` keys a failure by its call's name even when that call was not opened
    (its id was used before); ``admit`` drops what the journal would refuse, noted."""

    journaled: Container[str]  # the ids the session has opened
    open: set[str]
    names: dict[str, str]
    opened: set[str] = attrs.field(factory=set)  # the ids the batch opens

    def admit(self, raised: Iterable[Event]) -> list[Event]:
        """``raised`` without a second opening of an id, or a result for a closed call."""
        out: list[Event] = []
        for e in raised:
            if isinstance(e, CallOpened):
                self.names[e.call_id] = e.name
            if isinstance(e, CallOpened) and self._seen(e.call_id):
                out.append(_note("call_id_reused", REUSED.format(call_id=e.call_id)))
                continue
            if isinstance(e, CallResolved) and e.call_id not in self.open:
                continue  # its call was not opened again (noted there)
            if isinstance(e, CallOpened):
                self.opened.add(e.call_id)
                self.open.add(e.call_id)
            elif isinstance(e, CallResolved):
                self.open.discard(e.call_id)
            out.append(e)
        return out

    def _seen(self, call_id: str) -> bool:
        return call_id in self.opened or call_id in self.journaled


def is_summary(message: AnyMessage) -> bool:
    """Whether ``message`` is a summary a summarization middleware put in the history."""
    return bool(message.additional_kwargs.get("lc_source") == SUMMARY_SOURCE)


def entry(message: AnyMessage, names: Mapping[str, str]) -> Entry:
    """``message`` as a turn; ``names`` maps the calls seen so far to their names.
    A lone surrogate anywhere in it is replaced first (noted)."""
    repaired = _repaired(message)
    if repaired is message:
        return _entry(message, names)
    done = _entry(repaired, names)
    text = f"message {message.id}: lone surrogates (text no journal stores) replaced by U+FFFD"
    return attrs.evolve(done, raised=(*done.raised, _note("lone_surrogate", text)))


def _entry(message: AnyMessage, names: Mapping[str, str]) -> Entry:
    role = _ROLES.get(message.type, message.type)
    if isinstance(message, AIMessage):
        return Entry(role=role, content=render(message), raised=tuple(_opened(message)))
    if isinstance(message, ToolMessage):
        return Entry(role=role, content=message.text, raised=tuple(_result(message, names)))
    return Entry(role=role, content=message.text, raised=tuple(_stated(message)))


def _repaired(message: AnyMessage) -> AnyMessage:
    """``message`` itself, or a copy with every lone surrogate replaced by U+FFFD."""
    fields = {k: getattr(message, k) for k in _REPAIRED if hasattr(message, k)}
    if not any(_SURROGATE.search(text) for text in _strings(fields)):
        return message
    return message.model_copy(update=_scrub(fields))


def _strings(value: Any) -> Iterator[str]:
    """Every string in ``value`` (its dicts' keys too), walked through lists and dicts."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    return value


def render(message: AIMessage) -> str:
    """An AI message's text and its tool calls, one a line."""
    calls = [
        f"[tool_call {c['id']}] {c['name']} {json.dumps(c['args'], sort_keys=True, default=str)}"
        for c in message.tool_calls
    ]
    return "\n".join([message.text, *calls]) if message.text else "\n".join(calls)


def call_name(name: str, args: Mapping[str, object]) -> str:
    """A call's name: its tool, and its first argument when that is a short string."""
    first = next(iter(args.values()), None)
    if isinstance(first, str) and first.strip():
        return f"{name}: {' '.join(first.split())[:ARG_CHARS]}"
    return name


def _opened(message: AIMessage) -> list[Event]:
    out: list[Event] = []
    for c in message.tool_calls:
        if not c["id"]:
            text = f"a {c['name']!r} call without an id: a turn, no call opened"
            out.append(_note("call_without_id", text))
            continue
        name = call_name(c["name"], c["args"])
        out.append(CallOpened(call_id=c["id"], kind="tool_call", name=name))
    return out


def _result(message: ToolMessage, names: Mapping[str, str]) -> list[Event]:
    name = names.get(message.tool_call_id)
    error = message.status == "error"
    rejected = error and message.additional_kwargs.get("lc_source") == HITL_SOURCE
    out: list[Event] = []
    if name is not None:
        outcome = "rejected" if rejected else "error" if error else "ok"
        out.append(CallResolved(call_id=message.tool_call_id, outcome=outcome))
    else:
        out.append(_note("result_without_call", ORPHAN.format(call_id=message.tool_call_id)))
    if error:
        reason = " ".join(message.text.split())[:REASON_CHARS]
        key = name or message.name or message.tool_call_id or "tool"
        disposition = "rejected" if rejected else "failed"
        out.append(ItemDisposed(key=key, disposition=disposition, reason=reason))
    return out


def _stated(message: AnyMessage) -> list[Event]:
    """A message's rules: the one ``tierlog_rule`` names, else (a human's) by heuristic."""
    stated = message.additional_kwargs.get("tierlog_rule")
    if isinstance(stated, str) and stated:
        return [ConstraintStated(key=stated, text=" ".join(message.text.split()))]
    found: list[Event] = []
    if isinstance(message, HumanMessage):
        found += stated_rules(message.text)
    if stated is None:
        return found
    text = f"tierlog_rule {stated!r} is not a non-empty string: passed over"
    return [*found, _note("rule_key_unusable", text)]


def _note(kind: str, text: str) -> Noted:
    return Noted(kind=kind, text=text)
