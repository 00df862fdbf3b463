"""Reading Claude Code transcripts into typed values: the main chain, messages, bad files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eventstore import InvalidEvent
from eventstore import _claude_code as cc
from tests import transcripts
from tests.transcripts import Script


@pytest.fixture(scope="module", name="long")
def _long(tmp_path_factory: pytest.TempPathFactory) -> cc.Transcript:
    folder = tmp_path_factory.mktemp("long")
    return cc.read(transcripts.plain_copy(transcripts.LONG_SESSION, folder))


def _messages(t: cc.Transcript, role: str) -> list[cc.Message]:
    return [i for i in t.items if isinstance(i, cc.Message) and i.role == role]


def _calls(t: cc.Transcript) -> list[cc.ToolUse]:
    return [b for m in _messages(t, "assistant") for b in m.blocks if isinstance(b, cc.ToolUse)]


def _entries(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in transcripts.text_of(path).splitlines() if line.strip()]


class TestMainChain:
    def test_every_real_message_is_on_the_main_chain(self, long: cc.Transcript) -> None:
        """All 491 user and assistant entries of the real session are read, none warned off."""
        raw = _entries(transcripts.LONG_SESSION)
        entries = [e for e in raw if e["type"] in ("user", "assistant")]
        ids = {e["message"]["id"] for e in entries if e["type"] == "assistant"}  # type: ignore[index]
        assert long.warnings == ()
        assert len(_messages(long, "assistant")) == len(ids) == 152
        users = sum(e["type"] == "user" and not e.get("isCompactSummary") for e in entries)
        assert len(_messages(long, "user")) == users == 191

    def test_parallel_calls_off_the_parent_walk_are_kept(self) -> None:
        """The Glob call and its result hang off a side branch; both are on the chain."""
        t = cc.read(transcripts.TOOL_HEAVY)
        assert "toolu_01JJds55jYrYwd9TktNGndRY" in {c.id for c in _calls(t)}
        results = [
            b.tool_use_id
            for m in _messages(t, "user")
            for b in m.blocks
            if isinstance(b, cc.ToolResult)
        ]
        assert "toolu_01JJds55jYrYwd9TktNGndRY" in results

    def test_the_walk_crosses_the_compaction(self, long: cc.Transcript) -> None:
        """The first request, long before the boundary, is read (logicalParentUuid)."""
        first = _messages(long, "user")[0]
        assert (first.line, first.blocks) == (5, (cc.Text(text="Implement spotter-gqc"),))

    def test_an_abandoned_branch_is_not_read(self) -> None:
        """Entries the leaf does not descend from (an edited message) are left out, warned."""
        s = Script()
        s.user("hello")
        s.assistant(s.text("hi"))
        fork = s.parent
        s.user("first try")
        s.assistant(s.text("answer"))
        s.parent = fork  # the user edited "first try": a new branch from the same parent
        s.user("second try")
        s.assistant(s.text("other answer"))
        t = cc.parse(s.dump().encode())
        said = [m.blocks[0] for m in t.items if isinstance(m, cc.Message)]
        assert said == [cc.Text(text=x) for x in ("hello", "hi", "second try", "other answer")]
        assert t.warnings == (
            "line 3: 2 user/assistant entries off the main chain (an abandoned branch)"
            " are not turns",
        )

    def test_sidechain_entries_are_not_read(self) -> None:
        """A subagent's entries in the session file are not messages of the session."""
        s = Script()
        s.user("go")
        side = s.user("subagent prompt")
        side["isSidechain"] = True
        s.parent = s.lines[0]["uuid"]
        s.assistant(s.text("done"))
        t = cc.parse(s.dump().encode())
        assert [m.blocks[0] for m in t.items if isinstance(m, cc.Message)] == [
            cc.Text(text="go"),
            cc.Text(text="done"),
        ]

    def test_a_summarizer_transcript_is_refused(self) -> None:
        """A file of sidechain entries only (the acompact run) is not a session."""
        with pytest.raises(InvalidEvent, match="line 1: only sidechain entries"):
            cc.read(transcripts.SUMMARIZER_RUN)


class TestMessages:
    def test_split_entries_become_one_message(self, long: cc.Transcript) -> None:
        """The first reply, written as six entries, is one message with six blocks."""
        first = _messages(long, "assistant")[0]
        kinds = [b.kind if isinstance(b, cc.Text) else type(b).__name__ for b in first.blocks]
        assert kinds == ["text", "thinking", "text", "ToolUse", "ToolUse", "ToolUse"]
        assert first.usage == cc.Usage(prompt=3 + 8037 + 17842, output=441)

    def test_results_and_rejections(self) -> None:
        """A rejected tool use is recognised by its text and by toolUseResult."""
        t = cc.read(transcripts.SHORT)
        results = [
            b for m in _messages(t, "user") for b in m.blocks if isinstance(b, cc.ToolResult)
        ]
        assert [(r.is_error, r.rejected) for r in results] == [(True, True), (True, True)]

    def test_typed_text_is_told_from_the_rest(self) -> None:
        """Only what the user typed counts as typed: no tool results, notes or commands."""
        t = cc.read(transcripts.TOOL_HEAVY)
        typed = [m.blocks[0] for m in _messages(t, "user") if m.typed]
        assert [b.text for b in typed if isinstance(b, cc.Text)] == [
            "start phoenix in background",
            "scrolling back in xterm.js still does not work (maybe because outer web catches"
            " it)? websearch xterm.js tmux interactions",
        ]


class TestQueued:
    def test_text_typed_while_the_agent_works_is_kept(self, long: cc.Transcript) -> None:
        """The two queued requests that never came as entries of their own are read."""
        queued = [i for i in long.items if isinstance(i, cc.Queued)]
        assert [(q.line, q.text) for q in queued] == [
            (497, "check again"),
            (603, "new beads for the epic were added. tackle them"),
        ]

    def test_queued_text_that_arrives_later_is_not_doubled(self) -> None:
        """A queued /mcp that the user then ran as a command is that command's entry."""
        t = cc.read(transcripts.TOOL_HEAVY)
        assert [i for i in t.items if isinstance(i, cc.Queued)] == []


class TestBoundary:
    def test_the_real_boundary_and_its_summary(self, long: cc.Transcript) -> None:
        """compact_boundary's metadata and the isCompactSummary text, in file order."""
        (b,) = [i for i in long.items if isinstance(i, cc.Boundary)]
        assert (b.line, b.trigger, b.pre_tokens) == (1256, "auto", 167_094)
        assert b.summary.startswith("This session is being continued from a previous")
        assert len(b.summary) == 14_518
        at = long.items.index(b)
        assert all(i.line < b.line for i in long.items[:at])
        assert all(i.line > b.line for i in long.items[at + 1 :])


class TestBadFiles:
    def test_a_truncated_last_line_is_skipped_with_a_warning(self) -> None:
        """A file cut mid-line (a live session) reads up to its last sound line."""
        text = transcripts.SHORT.read_text()
        t = cc.parse(text[: len(text) - 40].encode())
        assert t.warnings == ("line 15: truncated or malformed last line skipped",)
        assert len(t.items) == len(cc.read(transcripts.SHORT).items)

    def test_a_bad_line_in_the_middle_is_an_error_naming_it(self) -> None:
        """Broken JSON before the end is not guessed around."""
        lines = transcripts.SHORT.read_text().splitlines()
        lines[6] = lines[6][:50]
        with pytest.raises(InvalidEvent, match=r"^line 7: not JSON"):
            cc.parse("\n".join(lines).encode())

    def test_unknown_entry_types_are_skipped_with_a_warning(self) -> None:
        """A type this reader does not know is named, once per type, with its first line."""
        extra = [json.dumps({"type": "telemetry", "n": i}) for i in range(3)]
        text = "\n".join([*extra, transcripts.SHORT.read_text()])
        t = cc.parse(text.encode())
        assert t.warnings == (
            "line 1: unknown entry type 'telemetry' skipped (and 2 more such lines)",
        )

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            (b"", "empty file"),
            (
                b'{"session_id": "x", "version": 1, "type": "SessionStarted", "payload": {}}\n',
                "line 1: not a Claude Code transcript",
            ),
            (
                b'{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n',
                "line 1: not a Claude Code transcript",
            ),
            (b"[1, 2, 3]\n", "line 1: not a JSON object"),
            (b'{"type": "user"}\n\xff\xfe\n{}\n', "line 2: not UTF-8"),
            (b'{"type": "user", "x": "\\ud800"}\n{}\n', "line 1: a lone surrogate"),
            (b"[" * 100_000 + b"\n{}\n", "line 1: not JSON"),
        ],
        ids=["empty", "tierlog-export", "chat-log", "array", "not-utf8", "surrogate", "deep"],
    )
    def test_another_tools_file_is_an_error_naming_the_line(
        self, data: bytes, message: str
    ) -> None:
        """Files that are not Claude Code transcripts get a clear error, never a traceback."""
        with pytest.raises(InvalidEvent, match=message):
            cc.parse(data)

    def test_a_missing_file_is_invalid_input(self, tmp_path: Path) -> None:
        """An unreadable path is InvalidEvent, not OSError."""
        with pytest.raises(InvalidEvent, match="cannot read"):
            cc.read(tmp_path / "nope.jsonl")

    def test_an_unusable_session_id_names_the_line(self) -> None:
        """The session id must be a tierlog session id (it names folders)."""
        s = Script(session_id="../etc")
        s.user("hi")
        with pytest.raises(InvalidEvent, match=re.escape("line 1: sessionId '../etc'")):
            cc.parse(s.dump().encode())

    def test_an_entry_without_content_names_its_line(self) -> None:
        """A user entry with no message content is malformed."""
        s = Script()
        s.user("hi")
        s.entry("user", message={"role": "user"})
        with pytest.raises(InvalidEvent, match="line 2: a user entry without message content"):
            cc.parse(s.dump().encode())


class TestShortKeys:
    @pytest.mark.parametrize(
        ("command", "head"),
        [
            ("git push 2>&1", "git push"),
            ("mix test test/x_test.exs 2>&1 | tail -5", "mix test"),
            ("cd /repo && FOO=1 mix compile --force", "mix compile"),
            ("tail -20 /tmp/out", "tail"),
            ("ls", "ls"),
            ("bd close spotter-gqc.6 --reason='x'", "bd close"),
            ("git status; git diff", "git status"),
            ("", ""),
        ],
    )
    def test_command_head(self, command: str, head: str) -> None:
        """A command's head is its first word and, if it has one, its subcommand."""
        assert cc.command_head(command) == head

    @pytest.mark.parametrize(
        ("tool", "args", "key"),
        [
            ("Read", {"file_path": "/home/u/proj/lib/a.ex"}, "lib/a.ex"),
            ("Edit", {"file_path": "/etc/hosts", "old_string": "x"}, "/etc/hosts"),
            ("Bash", {"command": "git push", "description": "Push"}, "git push"),
            ("Skill", {"skill": "pdf"}, "pdf"),
            ("Grep", {"pattern": "TODO", "path": "lib"}, "TODO"),
            ("TaskOutput", {"task_id": "bd0afab", "block": True}, "bd0afab"),
            ("TodoWrite", {"todos": []}, ""),
        ],
    )
    def test_short_key(self, tool: str, args: dict[str, object], key: str) -> None:
        """The short key a person would name a call by."""
        assert cc.short_key(tool, args, "/home/u/proj") == key
