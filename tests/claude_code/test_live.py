"""The real Claude Code CLI against the mock API: tool calls, both compactions, transcripts."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import eventstore
from tests.claude_code.cli import ClaudeCode
from tests.claude_code.mock_api import MockApi, Reply, Text, bash, say


def _entries(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


class TestMockApi:
    def test_answers_head_and_counts_tokens_on_loopback(self, api: MockApi) -> None:
        """HEAD / is 200, count_tokens answers JSON, and the server is on 127.0.0.1."""
        assert api.url.startswith("http://127.0.0.1:")
        head = urllib.request.Request(api.url + "/", method="HEAD")
        with urllib.request.urlopen(head, timeout=5) as response:
            assert response.status == 200
        body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
        count = urllib.request.Request(api.url + "/v1/messages/count_tokens", data=body)
        with urllib.request.urlopen(count, timeout=5) as response:
            assert json.load(response)["input_tokens"] > 0

    def test_streams_a_scripted_tool_call(self, api: MockApi) -> None:
        """An agent request (one with tools) takes the next scripted reply, streamed."""
        api.add(bash("ls", "Looking."))
        body = json.dumps({"tools": [{"name": "Bash"}], "messages": []}).encode()
        request = urllib.request.Request(api.url + "/v1/messages?beta=true", data=body)
        with urllib.request.urlopen(request, timeout=5) as response:
            stream = response.read().decode()
        assert "event: message_start" in stream
        assert '"stop_reason": "tool_use"' in stream
        assert '\\"command\\": \\"ls\\"' in stream
        assert api.replies == type(api.replies)()


class TestClaudeCode:
    def test_a_tool_call_that_fails_is_in_the_transcript(
        self, claude: ClaudeCode, api: MockApi
    ) -> None:
        """The CLI runs the scripted Bash call; its error result lands in the transcript."""
        api.add(bash("cat missing.txt"), say("It is missing."))
        run = claude.run("Show missing.txt")
        results = [
            b
            for e in _entries(claude.transcript(run.session_id))
            if e.get("type") == "user" and isinstance(e["message"]["content"], list)  # type: ignore[index]
            for b in e["message"]["content"]  # type: ignore[index]
        ]
        assert [b["is_error"] for b in results] == [True]
        assert "No such file" in results[0]["content"]

    def test_reported_usage_makes_auto_compaction_fire(
        self, claude: ClaudeCode, api: MockApi, tmp_path: Path
    ) -> None:
        """A reply near the window makes the next prompt compact first; tierlog ingests it."""
        api.add(bash("ls"), bash("echo a"), Reply(blocks=(Text(text="ok"),), prompt_tokens=190_000))
        api.summaries.append("Listed the folder.")
        first = claude.run("List the folder.")
        claude.run("And again?", resume=first.session_id)
        path = claude.transcript(first.session_id)
        (boundary,) = [e for e in _entries(path) if e.get("subtype") == "compact_boundary"]
        assert boundary["compactMetadata"]["trigger"] == "auto"  # type: ignore[index]
        assert len(api.summary_requests()) == 1
        with eventstore.open(tmp_path / "j.db") as journal:
            result = eventstore.ingest(journal, path)
        (review,) = result.compactions
        assert review.pre_tokens is not None
        assert review.pre_tokens >= 190_000

    def test_manual_compact_is_a_boundary(self, claude: ClaudeCode, api: MockApi) -> None:
        """``/compact`` writes a manual boundary and sends the mock a summary request."""
        api.add(say("Hello."))
        first = claude.run("Hi.")
        claude.run("/compact keep it short", resume=first.session_id)
        triggers = [
            e["compactMetadata"]["trigger"]  # type: ignore[index]
            for e in _entries(claude.transcript(first.session_id))
            if e.get("subtype") == "compact_boundary"
        ]
        assert triggers == ["manual"]
        assert "keep it short" in json.dumps(api.summary_requests()[0]["messages"][-1])
