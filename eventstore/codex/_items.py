"""One rollout line's payload as a typed item (see ``_rollout``). Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from eventstore.codex._values import (
    Aborted,
    Call,
    Compaction,
    Item,
    Message,
    Note,
    Output,
    Reasoning,
    Usage,
)

Raw = dict[str, Any]
Skipped = dict[tuple[str, str], list[int]]  # (note kind, what) -> lines
MAX_TOKENS = 10**9  # a count past this is no context's: the event is passed over
PASSED_TYPES = frozenset({"session_meta", "turn_context", "world_state", "token_usage_record"})
PASSED_EVENTS = frozenset(
    {
        "task_started",
        "task_complete",
        "user_message",
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "item_started",
        "item_completed",
        "thread_settings_applied",
        "exec_command_begin",
        "exec_command_end",
        "exec_command_output_delta",
        "context_compacted",
    }
)
# notes on items read all the same, by a guess the note states (not passed over)
READ_ANYWAY = frozenset({"call_without_id", "summary_encrypted", "no_replacement_history"})
CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
# the items a remote compaction (Responses API ``/compact``) returns its summary in, sealed
SEALED = frozenset({"compaction", "compaction_summary", "context_compaction"})
NOT_TYPED = ("<", "# AGENTS.md instructions")  # user-role text Codex adds, not the user's
_EXIT = re.compile(r"(?:Process exited with code|^Exit code:)\s*(-?\d+)", re.MULTILINE)
_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "pwsh", "powershell"})


def item_of(
    line: int, kind: str, payload: Raw, exits: Mapping[str, tuple[int, str]], skipped: Skipped
) -> Item | None:
    """The item a line holds, or ``None`` for a line tierlog passes over (noted in
    ``skipped`` when its type is unknown or it holds nothing readable)."""
    if kind == "response_item":
        return _response_item(line, payload, exits, skipped)
    if kind == "event_msg":
        return _event(line, payload, skipped)
    if kind == "compacted":
        return _compaction(line, payload, skipped)
    if kind not in PASSED_TYPES:
        skipped.setdefault(("unknown_type", f"line type {kind!r}"), []).append(line)
    return None


def skip_notes(skipped: Skipped) -> list[Note]:
    """One note per kind of line passed over or guessed at, with how many and the first line."""
    return [
        Note(
            kind=kind,
            text=what if kind in READ_ANYWAY else f"{what}: passed over",
            line=lines[0],
            count=len(lines),
        )
        for (kind, what), lines in sorted(skipped.items(), key=lambda kv: kv[1][0])
    ]


def _response_item(
    line: int, p: Raw, exits: Mapping[str, tuple[int, str]], skipped: Skipped
) -> Item | None:
    kind = p.get("type")
    if kind == "message":
        role, text = str(p.get("role", "")), text_of(p.get("content"))
        typed = role == "user" and not text.lstrip().startswith(NOT_TYPED)
        return Message(line=line, role=role, text=text, typed=typed)
    if kind == "reasoning":
        summary = text_of(p.get("summary"))
        if summary:
            return Reasoning(line=line, text=summary)
        what = "reasoning without a readable summary (encrypted)"
        skipped.setdefault(("reasoning_unread", what), []).append(line)
        return None
    if kind in CALLS:
        return _call(line, p, skipped)
    if kind in OUTPUTS:
        return _output(line, p, exits)
    skipped.setdefault(("unknown_type", f"response_item {kind!r}"), []).append(line)
    return None


def _call(line: int, p: Raw, skipped: Skipped) -> Call:
    arguments = p.get("arguments", p.get("input", p.get("action", "")))
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True)
    call_id = p.get("call_id") or p.get("id")
    if not call_id:
        what = "a call without call_id or id: named line-N by its line, no output can resolve it"
        skipped.setdefault(("call_without_id", what), []).append(line)
    return Call(
        line=line,
        call_id=str(call_id or f"line-{line}"),
        name=str(p.get("name") or p.get("type")),
        arguments=text,
        command=command_of(arguments),
    )


def command_of(arguments: object) -> str:
    """The shell command a call runs (``cmd``/``command``, a string or an argv), or ``""``."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return ""
    if not isinstance(arguments, dict):
        return ""
    command = arguments.get("cmd", arguments.get("command"))
    if isinstance(command, list) and all(isinstance(w, str) for w in command):
        if len(command) >= 3 and command[0] in _SHELLS and command[1].startswith("-"):
            return str(command[2])
        return " ".join(command)
    return command if isinstance(command, str) else ""


def _output(line: int, p: Raw, exits: Mapping[str, tuple[int, str]]) -> Output:
    call_id = str(p.get("call_id", ""))
    raw = p.get("output")
    text = raw if isinstance(raw, str) else text_of(raw)
    code, source = exits.get(call_id) or _exit_from(raw, text)
    failed = code != 0 if code is not None else source == "output_text"
    if source == "success":
        failed = isinstance(raw, dict) and raw.get("success") is False
    return Output(
        line=line, call_id=call_id, text=text, failed=failed, exit_code=code, source=source
    )


def _exit_from(raw: object, text: str) -> tuple[int | None, str]:
    """What an output's own text says of how its call ended (no event said)."""
    if isinstance(raw, dict) and isinstance(raw.get("success"), bool):
        return None, "success"
    try:  # older CLIs: a JSON string with metadata.exit_code
        meta = json.loads(text).get("metadata", {}) if text.startswith("{") else {}
    except (ValueError, AttributeError):
        meta = {}
    if isinstance(meta, dict) and type(meta.get("exit_code")) is int:
        return meta["exit_code"], "metadata"
    if match := _EXIT.search(text):
        return int(match.group(1)), "output_text"
    if text.startswith("execution error:"):
        return None, "output_text"
    return None, ""


def _event(line: int, p: Raw, skipped: Skipped) -> Item | None:
    kind = p.get("type")
    if kind == "token_count":
        return _usage(line, p.get("info"), skipped)
    if kind == "turn_aborted":
        return Aborted(line=line, reason=str(p.get("reason", "")))
    if kind not in PASSED_EVENTS:
        skipped.setdefault(("unknown_type", f"event_msg {kind!r}"), []).append(line)
    return None


def _usage(line: int, info: object, skipped: Skipped) -> Usage | None:
    if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
        return None  # a rate-limit update alone
    last = info["last_token_usage"]
    prompt, output = last.get("input_tokens"), last.get("output_tokens")
    if not (_tokens(prompt) and _tokens(output)):
        what = "token_count whose counts are not token counts (0 to 10**9)"
        skipped.setdefault(("token_count_unread", what), []).append(line)
        return None
    window = info.get("model_context_window")
    if window is not None and not (_tokens(window) and window):
        what = f"model_context_window {window!r} of a token_count, which is not a window"
        skipped.setdefault(("window_unread", what), []).append(line)
        window = None
    return Usage(line=line, prompt=prompt, output=output, window=window)


def _tokens(n: object) -> TypeGuard[int]:
    """Whether ``n`` is a count of tokens a context could hold."""
    return type(n) is int and 0 <= n < MAX_TOKENS


def _compaction(line: int, p: Raw, skipped: Skipped) -> Compaction:
    history = p.get("replacement_history")
    kept = None
    if isinstance(history, list):
        kept = tuple(
            text_of(i.get("content"))
            for i in history
            if isinstance(i, dict) and i.get("type") == "message" and i.get("role") != "developer"
        )
        if any(isinstance(i, dict) and i.get("type") in SEALED for i in history):
            what = "compacted item whose summary is encrypted: judged by the messages it kept"
            skipped.setdefault(("summary_encrypted", what), []).append(line)
    else:
        what = "compacted item without replacement_history (an older CLI): the summary alone"
        skipped.setdefault(("no_replacement_history", what), []).append(line)
    return Compaction(line=line, message=str(p.get("message", "")), kept=kept)


def text_of(content: object) -> str:
    """The text of a content list (``input_text``, ``output_text``, ``summary_text``...)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [c.get("text") for c in content if isinstance(c, dict)]
    return "\n".join(t for t in parts if isinstance(t, str))
