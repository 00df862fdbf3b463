"""Content blocks of Claude Code messages as typed values, and the short keys of tool calls."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from eventstore.claude_code._lines import Warnings, shown
from reducers import InvalidEvent

REJECTED_TEXT = "The user doesn't want to proceed with this tool use"
PERMISSION_TEXT = "Claude requested permissions to"  # refused by the permission settings
KEY_CHARS = 60


@attrs.frozen(kw_only=True)
class Text:
    """Text the model read or wrote; ``kind`` is ``text``, ``thinking`` or another block type."""

    text: str
    kind: str = "text"


@attrs.frozen(kw_only=True)
class ToolUse:
    """A tool call: its id, tool name, short key and input as JSON."""

    id: str
    name: str
    key: str
    input: str


@attrs.frozen(kw_only=True)
class ToolResult:
    """A tool call's result; ``rejected`` when the user refused to let it run."""

    tool_use_id: str
    text: str
    is_error: bool
    rejected: bool


Block: TypeAlias = Text | ToolUse | ToolResult
Raw: TypeAlias = dict[str, Any]


def blocks(
    content: object, *, line: int, cwd: str, refused: bool, warnings: Warnings
) -> tuple[Block, ...]:
    """A message's content as typed blocks; ``refused``: the entry says the user
    rejected the tool use (``toolUseResult``). A ``tool_use`` without an id is no call
    and an ``is_error`` that is not a boolean counts as an error, each with a warning."""
    if isinstance(content, str):
        return (Text(text=content),)
    if not isinstance(content, list):
        raise InvalidEvent(f"line {line}: message content is neither text nor a list")
    return tuple(_block(b, line, cwd, refused, warnings) for b in content)


def _block(b: object, line: int, cwd: str, refused: bool, warnings: Warnings) -> Block:
    if not isinstance(b, dict):
        return Text(text=str(b))
    kind = str(b.get("type"))
    if kind == "text":
        return Text(text=str(b.get("text", "")))
    if kind == "thinking":
        return Text(text=str(b.get("thinking", "")), kind="thinking")
    if kind in ("tool_use", "tool_result") and not isinstance(b.get(_ID[kind]), str):
        return _no_call(b, kind, line, warnings)
    if kind == "tool_use":
        return _tool_use(b, b["id"], line, cwd, warnings)
    if kind == "tool_result":
        text = _result_text(b.get("content"))
        is_error = _is_error(b.get("is_error"), b["tool_use_id"], line, warnings)
        asked = text.startswith((REJECTED_TEXT, PERMISSION_TEXT))
        rejected = is_error and (asked or refused)
        return ToolResult(
            tool_use_id=b["tool_use_id"], text=text, is_error=is_error, rejected=rejected
        )
    return Text(text="", kind=kind)


_ID = {"tool_use": "id", "tool_result": "tool_use_id"}


def _no_call(b: Raw, kind: str, line: int, warnings: Warnings) -> Block:
    """A ``tool_use`` or ``tool_result`` whose id is not a string: no call (a note)."""
    value, name = shown(b.get(_ID[kind])), str(b.get("name") or "tool")
    if kind == "tool_use":
        note = f"a {name} tool_use whose id is {value} is no call"
        text = f"{name} {json.dumps(b.get('input'), ensure_ascii=False, sort_keys=True)}"
    else:
        note = f"a tool_result whose tool_use_id is {value} answers no call: ignored"
        text = _result_text(b.get("content"))
    warnings.note("bad_value", line, note, fold=f"{kind}-id")
    return Text(text=text, kind=f"{kind} without an id")


def _tool_use(b: Raw, call_id: str, line: int, cwd: str, warnings: Warnings) -> Block:
    name = str(b.get("name") or "tool")
    raw_input = b.get("input")
    args = raw_input if isinstance(raw_input, dict) else {}
    text = json.dumps(raw_input, ensure_ascii=False, sort_keys=True)
    if not call_id.strip():
        warnings.note(
            "bad_value", line, f"a {name} tool_use without an id is no call", fold="no-id"
        )
        return Text(text=f"{name} {text}", kind="tool_use without an id")
    return ToolUse(id=call_id, name=name, key=short_key(name, args, cwd), input=text)


def _is_error(value: object, call_id: str, line: int, warnings: Warnings) -> bool:
    """``is_error`` must be a boolean (or absent); anything else counts as an error."""
    if value is None or isinstance(value, bool):
        return value is True
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    text = f"tool_result for {call_id} has is_error {shown}, not true or false: counted as an error"
    warnings.note("bad_value", line, text, fold="is_error")
    return True


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(c.get("text", "")) if c.get("type") == "text" else f"[{c.get('type')}]"
            for c in content
            if isinstance(c, dict)
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def text_of(blocks: Sequence[Block]) -> str:
    """The plain text blocks, joined."""
    return "\n".join(b.text for b in blocks if isinstance(b, Text) and b.kind == "text")


# -- short keys --------------------------------------------------------------------------
_KEY_FIELDS = (
    "file_path",
    "notebook_path",
    "command",
    "skill",
    "pattern",
    "url",
    "query",
    "task_id",
    "shell_id",
    "subagent_type",
    "description",
    "path",
    "prompt",
)
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9._:-]*")
_PREFIX = re.compile(r"^(?:\s*(?:cd\s+\S+\s*&&|[A-Za-z_][A-Za-z0-9_]*=\S*)\s*)+")
_SHELL_STOP = re.compile(r"\s(?:\||&&|\|\||;|\d?>>?|<)|[;|]")


def short_key(tool: str, args: Mapping[str, object], cwd: str = "") -> str:
    """What a person calls this call: a file path (relative to ``cwd``), a command's
    head (``git push``), a skill name, a pattern, a URL, a task id; ``""`` if none."""
    for field in _KEY_FIELDS:
        value = args.get(field)
        if isinstance(value, str) and value.strip():
            if field == "command" and tool == "Bash":
                return command_head(value)
            if field.endswith("path") and cwd and value.startswith(cwd.rstrip("/") + "/"):
                value = value[len(cwd.rstrip("/")) + 1 :]
            return " ".join(value.split())[:KEY_CHARS]
    return ""


def command_head(command: str) -> str:
    """A shell command's first word, and its subcommand if it has one (``mix test``)."""
    first = command.strip().splitlines()[0] if command.strip() else ""
    first = _SHELL_STOP.split(_PREFIX.sub("", first), maxsplit=1)[0]
    words = first.split()
    if not words:
        return ""
    head = words[:2] if len(words) > 1 and _SUBCOMMAND.fullmatch(words[1]) else words[:1]
    return " ".join(head)[:KEY_CHARS]
