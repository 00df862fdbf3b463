"""A mock of the OpenAI Responses API on 127.0.0.1, scripted, for the real Codex CLI.

Codex (with a custom model provider whose ``base_url`` is this server's ``/v1`` and
``wire_api = "responses"``) sends ``POST /v1/responses`` with ``stream: true`` and reads
server-sent events: ``response.created``, one ``response.output_item.done`` per output
item, ``response.completed`` with ``usage``. Each request takes the next :class:`Reply`
of the script; every request body is kept in :attr:`MockApi.requests`. A compaction is
an ordinary request whose last input message starts ``You are performing a CONTEXT
CHECKPOINT COMPACTION``: the script's reply text is the summary.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

COMPACTION_PROMPT = "You are performing a CONTEXT CHECKPOINT COMPACTION"


def _strings(value: Sequence[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class Reply:
    """One scripted response: shell commands to call (``exec_command``), then text;
    ``prompt`` is the input tokens it reports; ``hang`` seconds to wait first."""

    commands: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    text: str | None = None
    prompt: int = 1_000
    output: int = 20
    hang: float = 0.0


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up (the CLI interrupted or exiting) is no error worth
        printing: a handler thread still writing would print its traceback into whatever
        test runs next, whose captured standard error then differs."""


@attrs.define
class MockApi:
    """The server; a context manager that serves on a free loopback port."""

    script: list[Reply] = attrs.field(factory=list)
    requests: list[dict[str, Any]] = attrs.field(factory=list)
    _server: ThreadingHTTPServer | None = None
    _count: int = 0

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> MockApi:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(404)
                self.end_headers()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                api.requests.append(body)
                self._stream(api.next_reply())

            def _stream(self, events: Sequence[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for e in events:
                    self.wfile.write(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode())
                    self.wfile.flush()

        self._server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def next_reply(self) -> list[dict[str, Any]]:
        """The events of the next scripted reply (an empty answer past the script)."""
        k = self._count
        self._count += 1
        reply = self.script[k] if k < len(self.script) else Reply(text=f"(unscripted {k})")
        if reply.hang:
            time.sleep(reply.hang)
        return events(k, reply)


def events(k: int, reply: Reply) -> list[dict[str, Any]]:
    """The server-sent events of reply ``k``."""
    items: list[dict[str, Any]] = [
        {
            "type": "function_call",
            "id": f"fc_{k}_{j}",
            "call_id": f"call_{k}_{j}",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": command}),
        }
        for j, command in enumerate(reply.commands)
    ]
    if reply.text is not None:
        content = [{"type": "output_text", "text": reply.text, "annotations": []}]
        items.append({"type": "message", "id": f"msg_{k}", "role": "assistant", "content": content})
    usage = {
        "input_tokens": reply.prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.prompt + reply.output,
    }
    out: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": f"resp_{k}"}}]
    out += [
        {"type": "response.output_item.done", "item": item, "output_index": i}
        for i, item in enumerate(items)
    ]
    out.append({"type": "response.completed", "response": {"id": f"resp_{k}", "usage": usage}})
    return out


def is_compaction(request: dict[str, Any]) -> bool:
    """Whether ``request`` is Codex's summarisation request."""
    last = (request.get("input") or [{}])[-1]
    texts = [c.get("text", "") for c in last.get("content", []) if isinstance(c, dict)]
    return any(t.startswith(COMPACTION_PROMPT) for t in texts)
