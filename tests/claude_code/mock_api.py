"""A mock of the Anthropic Messages API on 127.0.0.1, for running the real Claude Code CLI.

The CLI sends ``HEAD /`` first, then ``POST /v1/messages?beta=true`` (streamed as
server-sent events) and sometimes ``POST /v1/messages/count_tokens``. The mock answers
from a script:

- a request whose last user message asks for a summary of the conversation (what
  Claude Code sends to compact) takes the next of ``summaries`` (a default one when
  none is left), wrapped in ``<analysis>``/``<summary>`` as Claude Code expects;
- a request that offers tools (the agent's own turn) takes the next :class:`Reply`
  (a plain "Done." when none is left);
- any other request (a side question Claude Code asks a small model, or the
  "Warmup" requests of 2.0.x) gets "none".

Every reply reports ``usage``: ``input_tokens`` is the reply's ``prompt_tokens``, so
a script can push the context near the window and make auto-compaction fire. Every
request is kept (``requests``) so a test can read what the CLI sent. Binds
127.0.0.1 on a free port; use it as a context manager.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

import attrs

SUMMARY_ASK = "create a detailed summary of the conversation"
DEFAULT_SUMMARY = "The user asked for a few shell commands; they ran."

Json: TypeAlias = dict[str, Any]


@attrs.frozen(kw_only=True)
class Text:
    """A text block the model writes."""

    text: str


@attrs.frozen(kw_only=True)
class ToolCall:
    """A ``tool_use`` block: the tool's name and its input."""

    name: str
    input: Json


Block: TypeAlias = Text | ToolCall


@attrs.frozen(kw_only=True)
class Reply:
    """One scripted response to the agent's request, and the usage it reports."""

    blocks: tuple[Block, ...]
    prompt_tokens: int = 2_000
    output_tokens: int = 20


def bash(command: str, text: str = "") -> Reply:
    """A reply that runs one shell command (with an optional sentence before it)."""
    lead = (Text(text=text),) if text else ()
    return Reply(blocks=(*lead, ToolCall(name="Bash", input={"command": command})))


def say(text: str, prompt_tokens: int = 2_000) -> Reply:
    """A reply of plain text."""
    return Reply(blocks=(Text(text=text),), prompt_tokens=prompt_tokens)


def is_summary_request(body: Json) -> bool:
    """Whether a request asks the model to summarise the conversation (a compaction)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return SUMMARY_ASK in json.dumps(message.get("content"))
    return False


class MockApi:
    """The mock server (see the module doc); ``url`` once started."""

    def __init__(self, replies: Iterable[Reply] = (), summaries: Iterable[str] = ()) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.summaries: deque[str] = deque(summaries)
        self.requests: list[Json] = []
        self._lock = threading.Lock()
        self._count = 0
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL to give Claude Code (``ANTHROPIC_BASE_URL``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> MockApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def add(self, *replies: Reply) -> None:
        """Queue more replies for the agent's next requests."""
        self.replies.extend(replies)

    def summary_requests(self) -> list[Json]:
        """The compaction requests received so far."""
        return [r for r in self.requests if is_summary_request(r)]

    def after_summary(self, n: int = 0) -> Json:
        """The first agent request (one with tools) after the ``n``-th compaction request:
        what the model was sent right after that compaction (IndexError if none yet)."""
        at = [i for i, r in enumerate(self.requests) if is_summary_request(r)][n]
        return next(r for r in self.requests[at + 1 :] if r.get("tools"))

    def answer(self, body: Json) -> tuple[str, Reply]:
        """The message id and reply for one request body (and keep the request)."""
        with self._lock:
            self.requests.append(body)
            self._count += 1
            mid = f"msg_mock_{self._count:04d}"
            if is_summary_request(body):
                text = self.summaries.popleft() if self.summaries else DEFAULT_SUMMARY
                wrapped = f"<analysis>Summarising.</analysis>\n<summary>{text}</summary>"
                return mid, Reply(blocks=(Text(text=wrapped),), prompt_tokens=3_000)
            if body.get("tools") and not _warmup(body):
                return mid, self.replies.popleft() if self.replies else say("Done.")
            return mid, say("none", prompt_tokens=50)


def _warmup(body: Json) -> bool:
    """Whether a request is one of the "Warmup" requests Claude Code 2.0.x sends first."""
    messages = body.get("messages") or [{}]
    return '"text": "Warmup"' in json.dumps(messages[0].get("content"))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up (the CLI exiting) is no error worth printing."""


def _handler(api: MockApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_HEAD(self) -> None:
            self._send(200, b"", "text/plain")

        def do_GET(self) -> None:
            self._send(404, b"{}", "application/json")

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(size) or b"{}")
            if "count_tokens" in self.path:
                out = json.dumps({"input_tokens": len(json.dumps(body)) // 4})
                self._send(200, out.encode(), "application/json")
                return
            mid, reply = api.answer(body)
            stream = b"".join(_sse(mid, str(body.get("model", "mock")), reply))
            self._send(200, stream, "text/event-stream")

        def _send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            """Quiet: the tests read ``api.requests`` instead."""

    return Handler


def _sse(mid: str, model: str, reply: Reply) -> Iterator[bytes]:
    """The reply as the streamed events of one message."""
    usage = {"input_tokens": reply.prompt_tokens, "output_tokens": 1}
    start: Json = {"id": mid, "type": "message", "role": "assistant", "model": model}
    start |= {"content": []}
    start |= {"stop_reason": None, "stop_sequence": None, "usage": usage}
    yield _event("message_start", {"message": start})
    for index, block in enumerate(reply.blocks):
        yield from _block(index, block, f"{mid}_{index}")
    stop = "tool_use" if any(isinstance(b, ToolCall) for b in reply.blocks) else "end_turn"
    delta = {"stop_reason": stop, "stop_sequence": None}
    yield _event("message_delta", {"delta": delta, "usage": {"output_tokens": reply.output_tokens}})
    yield _event("message_stop", {})


def _block(index: int, block: Block, call_id: str) -> Iterator[bytes]:
    if isinstance(block, Text):
        start: Json = {"type": "text", "text": ""}
        delta: Json = {"type": "text_delta", "text": block.text}
    else:
        start = {"type": "tool_use", "id": f"toolu_{call_id}", "name": block.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block.input)}
    yield _event("content_block_start", {"index": index, "content_block": start})
    yield _event("content_block_delta", {"index": index, "delta": delta})
    yield _event("content_block_stop", {"index": index})


def _event(kind: str, data: Json) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
