"""The OpenAI Agents SDK's items as tierlog turns, worked out without touching the journal.

An item is stored as one turn holding its exact JSON text (``encode``) and read back
as that object (``decode``); its role is its ``role`` or ``type``. A tool call item
(``CALL_OUTPUTS``) opens a call and its ``*_output`` resolves it; ``plan_items`` turns
a batch of items into those events (with token counts worked out beforehand),
showing a call again before its output when a summary or truncation took it out of
the context. Everything here is pure: the one read a plan may need, a turn by index,
is handed in.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, TypeAlias

from eventstore._values import Turn
from reducers import (
    CallOpened,
    CallResolved,
    Event,
    InvalidEvent,
    OpenCall,
    SessionState,
    TurnAppended,
    in_spans,
)

Item: TypeAlias = dict[str, Any]
Span = tuple[int, int]
TurnAt = Callable[[int], Turn]  # the turn at an index, read from the log

# tool call item type -> the item type that answers it (the SDK's own pairing)
CALL_OUTPUTS: Final = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
}
OUTPUT_CALLS: Final = {output: call for call, output in CALL_OUTPUTS.items()}
SUMMARY_ROLE: Final = "system"
_OUTCOME_CHARS: Final = 200


def summary_item(text: str) -> Item:
    """The item a summary shows the runner: a system message with its text."""
    return {"role": SUMMARY_ROLE, "content": text}


MAX_DEPTH: Final = 200  # objects and arrays nested in an item, at most


def encode(position: int, item: object) -> str:
    """The item's JSON text (key order kept), or InvalidEvent for anything that is not
    strict JSON: ``get_items`` must hand back exactly what was added."""
    if not isinstance(item, dict):
        raise InvalidEvent(f"item {position}: expected a JSON object, got {type(item).__name__}")
    problem = json_problem(item)
    if problem is not None:
        raise InvalidEvent(f"item {position} is not JSON data: {problem}")
    _check_call_id(position, item)
    return json.dumps(item, ensure_ascii=False, allow_nan=False)


def json_problem(value: object) -> str | None:
    """Why ``value`` is not strict JSON (walked without recursion), or ``None``: objects
    with text keys, arrays, text that is valid Unicode, finite numbers, true, false,
    null, nested at most ``MAX_DEPTH`` deep."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                return f"nested deeper than {MAX_DEPTH} levels"
            if isinstance(item, dict):
                if not all(isinstance(key, str) for key in item):
                    return "an object key is not text"
                stack += [(key, depth) for key in item]
            stack += [(v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)]
        elif isinstance(item, str):
            if not _valid_unicode(item):
                return f"text {item[:40]!r} holds a lone surrogate"
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return f"{item} is not a JSON number"
        elif item is not None and not isinstance(item, (bool, int)):
            return f"a {type(item).__name__} is not JSON"
    return None


def _valid_unicode(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _check_call_id(position: int, item: Item) -> None:
    """A tool call item, or its output, names its call: a call_id that is non-empty text."""
    kind = item.get("type")
    if kind in CALL_OUTPUTS or kind in OUTPUT_CALLS:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidEvent(
                f"item {position}: a {kind} item needs a call_id of text, not {call_id!r}"
            )


def decode(role: str, content: str) -> Item:
    """The item a turn holds; a turn that holds no JSON object shows as a message."""
    try:
        item = json.loads(content)
    except ValueError:
        item = None
    if isinstance(item, dict):
        return item
    return {"role": role, "content": content}


def _role(item: Item) -> str:
    for key in ("role", "type"):
        value = item.get(key)
        if isinstance(value, str) and value:
            return value
    return "item"


def _outcome(item: Item) -> str:
    output = item.get("output")
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return text if len(text) <= _OUTCOME_CHARS else text[: _OUTCOME_CHARS - 1] + "…"


def plan_items(
    state: SessionState,
    items: list[Item],
    texts: list[str],
    tokens: list[int],
    *,
    away: tuple[Span, ...],
    turn_at: TurnAt,
) -> list[Event]:
    """The turns (and call events) for ``items`` appended after ``state``.

    ``away`` are the turn indices a summary or truncation took out of the context;
    ``turn_at`` reads one turn back, to show a call from there again before its output.
    """
    events: list[Event] = []
    seen = set(state.call_ids)
    open_now = dict(state.open_calls)
    index = state.turns

    def turn(role: str, content: str, count: int) -> None:
        nonlocal index
        events.append(TurnAppended(index=index, role=role, content=content, tokens=count))
        index += 1

    for item, text, count in zip(items, texts, tokens, strict=True):
        kind = item.get("type")
        call_id = item.get("call_id")
        if kind in OUTPUT_CALLS and isinstance(call_id, str) and call_id in open_now:
            again = _call_away(state, away, open_now[call_id], OUTPUT_CALLS[kind], turn_at)
            if again is not None:  # its call was summarized or truncated: show it again
                turn(again.role, again.content, again.tokens)
            turn(_role(item), text, count)
            events.append(CallResolved(call_id=call_id, outcome=_outcome(item)))
            del open_now[call_id]
            continue
        turn(_role(item), text, count)
        if kind in CALL_OUTPUTS and isinstance(call_id, str) and call_id and call_id not in seen:
            name = item.get("name")
            label = name if isinstance(name, str) and name else str(kind)
            events.append(CallOpened(call_id=call_id, kind="tool_call", name=label))
            seen.add(call_id)
            open_now[call_id] = OpenCall(call_id=call_id, kind="tool_call", name=label, position=-1)
    return events


def _call_away(
    state: SessionState, away: tuple[Span, ...], call: OpenCall, kind: str, turn_at: TurnAt
) -> Turn | None:
    """The turn holding ``call``'s item, if a summary or truncation took it away."""
    if call.position < 0 or not state.turns:  # opened in this batch: still resident
        return None
    index = state.turn_index(call.position)
    if not 0 <= index < state.turns or not in_spans(away, index):
        return None
    held = turn_at(index)
    item = decode(held.role, held.content)
    if item.get("type") != kind or item.get("call_id") != call.call_id:
        return None  # not an item this adapter wrote: nothing to show again
    return held
