"""LangChain messages as journal turns and the obligations they raise. Pure.

A human message is a ``user`` turn, and each of its sentences that states a rule
(never, do not, always, must, only...) a pending constraint keyed ``heuristic: ...``,
as in Claude Code ingest. An AI message is an ``assistant`` turn; each tool call it
makes opens a call named by its tool and first argument. A tool message resolves its
call: ``status="error"`` is a negative fact on the call's name, ``rejected`` when a
human-in-the-loop decision refused the call, ``failed`` otherwise. A message
``additional_kwargs["tierlog_rule"]`` names is a rule whatever its words.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping

import attrs
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from reducers import CallOpened, CallResolved, ConstraintStated, Event, ItemDisposed

REASON_CHARS = 200
KEY_CHARS = 60  # as Claude Code ingest keys its rules
ARG_CHARS = 60
RULE = re.compile(r"\b(never|do not|don't|dont|always|must|only)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
HITL_SOURCE = "hitl_interrupt_decision"
SUMMARY_SOURCE = "summarization"


@attrs.frozen(kw_only=True)
class Entry:
    """One message as a turn and the events it raises after it."""

    role: str
    content: str
    raised: tuple[Event, ...]


def is_summary(message: AnyMessage) -> bool:
    """Whether ``message`` is a summary a summarization middleware put in the history."""
    return bool(message.additional_kwargs.get("lc_source") == SUMMARY_SOURCE)


def entry(message: AnyMessage, names: Mapping[str, str]) -> Entry:
    """``message`` as a turn; ``names`` maps the open calls' ids to their names."""
    role = _ROLES.get(message.type, message.type)
    if isinstance(message, AIMessage):
        return Entry(role=role, content=render(message), raised=tuple(_opened(message)))
    if isinstance(message, ToolMessage):
        return Entry(role=role, content=message.text, raised=tuple(_result(message, names)))
    raised = rules(message.text) if isinstance(message, HumanMessage) else []
    if isinstance(stated := message.additional_kwargs.get("tierlog_rule"), str):
        raised = [ConstraintStated(key=stated, text=" ".join(message.text.split()))]
    return Entry(role=role, content=message.text, raised=tuple(raised))


def render(message: AIMessage) -> str:
    """An AI message's text and its tool calls, one a line."""
    calls = [
        f"[tool_call {c['id']}] {c['name']} {json.dumps(c['args'], sort_keys=True)}"
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
    return [
        CallOpened(call_id=c["id"], kind="tool_call", name=call_name(c["name"], c["args"]))
        for c in message.tool_calls
        if c["id"]
    ]


def _result(message: ToolMessage, names: Mapping[str, str]) -> list[Event]:
    name = names.get(message.tool_call_id)
    error = message.status == "error"
    rejected = error and message.additional_kwargs.get("lc_source") == HITL_SOURCE
    out: list[Event] = []
    if name is not None:
        outcome = "rejected" if rejected else "error" if error else "ok"
        out.append(CallResolved(call_id=message.tool_call_id, outcome=outcome))
    if error:
        reason = " ".join(message.text.split())[:REASON_CHARS]
        key = name or message.name or message.tool_call_id
        disposition = "rejected" if rejected else "failed"
        out.append(ItemDisposed(key=key, disposition=disposition, reason=reason))
    return out


def rules(text: str) -> list[Event]:
    """The sentences of ``text`` that state a rule, as pending constraints (a heuristic:
    their keys start ``heuristic:``)."""
    out: list[Event] = []
    for sentence in _SENTENCE.split(text):
        sentence = " ".join(sentence.split())
        if sentence and RULE.search(sentence):
            out.append(ConstraintStated(key=rule_key(sentence), text=sentence))
    return out


def rule_key(sentence: str) -> str:
    """A rule's key: the sentence, or its start and a hash when it is long."""
    if len(sentence) <= KEY_CHARS:
        return f"heuristic: {sentence}"
    digest = hashlib.sha256(sentence.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"heuristic: {sentence[:KEY_CHARS]}... #{digest}"
