"""Hand-written rollout lines, in the shape Codex writes them, for the reader's tests."""

from __future__ import annotations

import json
from typing import Any

META = {"id": "s-1", "cli_version": "0.0.0-hand-written", "cwd": "/work"}
OK = b'{"type": "session_meta", "payload": {"id": "s"}}\n'


def lines(*rows: tuple[str, dict[str, Any]]) -> bytes:
    """Hand-written rollout lines (the shape Codex writes: timestamp, type, payload)."""
    rows = (("session_meta", META), *rows)
    out = [{"timestamp": "2026-01-01T00:00:00Z", "type": t, "payload": p} for t, p in rows]
    return b"".join(json.dumps(o).encode() + b"\n" for o in out)


def msg(role: str, text: str) -> tuple[str, dict[str, Any]]:
    kind = "output_text" if role == "assistant" else "input_text"
    content = [{"type": kind, "text": text}]
    return "response_item", {"type": "message", "role": role, "content": content}


def call(call_id: str, cmd: str) -> tuple[str, dict[str, Any]]:
    args = json.dumps({"cmd": cmd})
    payload = {"type": "function_call", "name": "exec_command", "arguments": args}
    return "response_item", {**payload, "call_id": call_id}


def out(call_id: str, text: str) -> tuple[str, dict[str, Any]]:
    return "response_item", {"type": "function_call_output", "call_id": call_id, "output": text}


def tokens(prompt: int, output: int) -> tuple[str, dict[str, Any]]:
    last = {"input_tokens": prompt, "output_tokens": output}
    return "event_msg", {"type": "token_count", "info": {"last_token_usage": last}}
