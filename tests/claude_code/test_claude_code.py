"""Reading Claude Code transcripts into typed values: the main chain, messages, bad files."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from eventstore import InvalidEvent
from eventstore.claude_code import _transcript as cc
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

    def test_queued_text_is_a_turn_where_it_was_taken_off_the_queue(self) -> None:
        """The real queued /mcp went along with a tool result (the reply reacts to it)."""
        t = cc.read(transcripts.TOOL_HEAVY)
        (queued,) = [i for i in t.items if isinstance(i, cc.Queued)]
        at = t.items.index(queued)
        assert (queued.line, queued.text) == (9, "/mcp")
        after = t.items[at + 1]
        assert isinstance(after, cc.Message)
        assert after.line == 11  # the result it went with

    def test_queued_text_delivered_as_the_next_entry_is_not_doubled(self) -> None:
        """Taken off the queue and sent as the next user entry: that entry is the turn."""
        s = Script()
        s.user("go")
        s.assistant(s.text("working"))
        s.queue("and run the tests")
        s.user("and run the tests")
        t = cc.parse(s.dump().encode())
        assert [i for i in t.items if isinstance(i, cc.Queued)] == []
        assert t.warnings == ()

    def test_text_still_queued_or_undecided_at_the_end_is_no_turn(self) -> None:
        """Never taken off the queue, or taken off as the file ends: no turn, a warning."""
        s = Script()
        s.user("go")
        s.queue("first", taken=False)
        s.queue("second")
        t = cc.parse(s.dump().encode())
        assert [i for i in t.items if isinstance(i, cc.Queued)] == []
        assert t.warnings == (
            "line 3: queued text taken off the queue as the file ends: not known yet whether"
            " it arrives as an entry, so not a turn",
            "line 2: queued text never taken off the queue is not a turn",
        )

    def test_a_notification_delivered_later_is_not_taken_for_typed_text(self) -> None:
        """A remove pairs with the latest text still queued and not yet delivered."""
        s = Script()
        s.user("go")
        s.queue("<task-notification>done</task-notification>", taken=False)
        s.assistant(s.text("working"))
        s.queue("check again")
        s.assistant(s.text("checking"))
        s.user("<task-notification>done</task-notification>")
        t = cc.parse(s.dump().encode())
        assert [(i.line, i.text) for i in t.items if isinstance(i, cc.Queued)] == [
            (4, "check again")
        ]
        assert t.warnings == ()


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

    def test_unknown_entry_types_are_noted_once_with_their_first_line(self) -> None:
        """A type this reader does not know is named, once per type, with its first line,
        and is a note for the journal."""
        extra = [json.dumps({"type": "telemetry", "n": i}) for i in range(3)]
        text = "\n".join([*extra, transcripts.NOTES_2_0.read_text()])
        t = cc.parse(text.encode())
        said = "unknown entry type 'telemetry': mapped to nothing, kept for the parent chain"
        assert t.warnings == (f"line 1: {said}",)
        assert [(n.kind, n.line, n.text) for n in t.notes] == [("unknown_entry", 1, said)]

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


def _deepest_loadable() -> int:
    """The deepest list json.loads reads at this stack depth (less a margin)."""
    depth = 2_000
    while depth > 200:
        try:
            json.loads("[" * depth + "]" * depth)
            return depth - 20
        except RecursionError:
            depth -= 50
    return depth


def _deep_result(depth: int) -> bytes:
    """A transcript whose tool_result (line 3) is a list nested ``depth`` deep."""
    s = Script()
    s.user("go")
    s.assistant(s.tool_use("t1", "Bash", command="ls"))
    s.result("t1", "placeholder")
    s.user("ok")
    nested = "[" * depth + "]" * depth
    return s.dump().replace('"placeholder"', '{"x": ' + nested + "}").encode()


class TestHostileLines:
    def test_a_number_too_long_to_convert_names_its_line(self) -> None:
        """Past Python's int-conversion limit: InvalidEvent naming the line, no ValueError."""
        s = Script()
        s.user("go")
        s.assistant(s.text("ok"), output=13)
        s.user("more")
        data = s.dump().replace('"output_tokens": 13', '"output_tokens": ' + "9" * 5000)
        with pytest.raises(InvalidEvent, match=r"^line 2: a number with more than 4,300 digits"):
            cc.parse(data.encode())

    @pytest.mark.parametrize("depth", [101, None])
    def test_deep_nesting_json_accepts_names_its_line(self, depth: int | None) -> None:
        """Nesting json.loads reads (up to the deepest it reads here) but that re-encoding
        need not survive: refused, naming the line."""
        depth = depth or _deepest_loadable()
        with pytest.raises(InvalidEvent, match=r"^line 3: JSON nested deeper than 100 levels"):
            cc.parse(_deep_result(depth))

    def test_deep_tool_input_with_a_lone_surrogate_names_its_line(self) -> None:
        """The lone-surrogate check never re-encodes what is nested too deeply."""
        s = Script()
        s.user("go")
        s.assistant(s.tool_use("t1", "Bash", command="ls"))
        s.user("ok")
        depth = _deepest_loadable() - 5
        nested = "[" * depth + '"\\ud800"' + "]" * depth
        data = s.dump().replace('{"command": "ls"}', '{"command": ' + nested + "}")
        with pytest.raises(InvalidEvent, match=r"^line 2: JSON nested deeper"):
            cc.parse(data.encode())

    def test_nesting_at_the_limit_is_read(self) -> None:
        """100 levels (the entry and message count) are fine."""
        t = cc.parse(_deep_result(95))
        assert len(t.items) == 4


class TestFiles:
    def test_a_fifo_is_refused_without_waiting(self, tmp_path: Path) -> None:
        """A FIFO nobody writes to is refused at once, not read forever."""
        fifo = tmp_path / "f.jsonl"
        os.mkfifo(fifo)
        with pytest.raises(InvalidEvent, match=r"^a FIFO, not a regular file: not read"):
            cc.read(fifo)

    @pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device")])
    def test_a_device_is_refused(self, path: str, kind: str) -> None:
        """/dev/zero would grow memory without end: refused before a byte is read."""
        with pytest.raises(InvalidEvent, match=f"^{kind}, not a regular file"):
            cc.read(path)

    def test_a_directory_is_refused(self, tmp_path: Path) -> None:
        """A folder is no transcript."""
        with pytest.raises(InvalidEvent, match=r"^a directory, not a regular file"):
            cc.read(tmp_path)

    def test_a_file_past_the_cap_is_refused_naming_the_line(self, tmp_path: Path) -> None:
        """The size cap holds mid-line: a line with no end is not read whole."""
        path = tmp_path / "big.jsonl"
        path.write_bytes(transcripts.SHORT.read_bytes() + b"x" * 10_000)
        size = transcripts.SHORT.stat().st_size
        with pytest.raises(InvalidEvent, match=f"line 16: the file is larger than {size + 1:,}"):
            cc.read(path, max_bytes=size + 1)
        assert cc.read(transcripts.SHORT, max_bytes=size).items  # exactly the cap: read


def _twice(s: Script) -> bytes:
    return (s.dump() * 2).encode()


class TestRepeatedEntries:
    def test_a_transcript_written_twice_reads_as_once(self) -> None:
        """Entries repeating a uuid (and uuid-less lines repeated whole) count once."""
        s = Script()
        s.user("fix it")
        s.assistant(s.tool_use("t1", "Bash", command="git push"), prompt=2_000)
        s.result("t1", "Exit code 1", error=True)
        s.boundary(2_100, "Summary: git push failed with exit code 1.")
        s.queue("go on", taken=False)
        s.user("go on")
        s.assistant(s.text("ok"), prompt=3_000)
        once = cc.parse(s.dump().encode())
        twice = cc.parse(_twice(s))
        assert twice.items == once.items
        assert twice.warnings == (
            "line 9: an entry repeating uuid 'u0' of line 1 skipped (and 7 more such lines)",
        )

    def test_a_boundary_off_the_main_chain_is_no_compaction(self) -> None:
        """A boundary on an abandoned branch is skipped with a warning."""
        s = Script()
        s.user("a")
        fork = s.parent
        s.assistant(s.text("b"))
        s.boundary(100, "summary of a branch the user left")
        s.parent = fork
        s.user("edited")
        s.assistant(s.text("c"))
        t = cc.parse(s.dump().encode())
        assert not [i for i in t.items if isinstance(i, cc.Boundary)]
        assert "line 3: a compact boundary off the main chain skipped" in t.warnings


class TestBoundaryWithoutSummary:
    def test_a_file_ending_at_a_boundary_compacts_nothing_yet(self) -> None:
        """The summary is not written yet: no compaction, a warning saying it is pending."""
        s = Script()
        s.user("Fix the build. Never push to main.")
        s.assistant(s.text("ok"), prompt=2_000)
        s.boundary(2_100, None)
        t = cc.parse(s.dump().encode())
        assert [type(i) for i in t.items] == [cc.Message, cc.Message]
        assert t.warnings == (
            "line 3: compact boundary whose summary is not in the file yet (a session still"
            " being written?): not compacted",
        )

    def test_a_chain_going_on_without_the_summary_skips_the_boundary(self) -> None:
        """A boundary followed by an ordinary message is no compaction."""
        s = Script()
        s.user("go")
        s.boundary(100, None)
        s.user("more")
        t = cc.parse(s.dump().encode())
        assert not [i for i in t.items if isinstance(i, cc.Boundary)]
        assert t.warnings == ("line 2: compact boundary without a summary skipped",)


def _result(block: cc.Block) -> bool:
    return isinstance(block, cc.ToolResult)


class TestMalformedValues:
    @pytest.mark.parametrize("value", ["true", "false", 1, None, True])
    def test_is_error_must_be_a_boolean(self, value: object) -> None:
        """A non-boolean is_error counts as an error, with a warning naming the line."""
        s = Script()
        s.user("go")
        s.assistant(s.tool_use("t1", "Bash", command="rm -rf build"))
        s.result("t1", "Permission denied")["message"]["content"][0]["is_error"] = value
        t = cc.parse(s.dump().encode())
        (result,) = [
            b for i in t.items if isinstance(i, cc.Message) for b in i.blocks if _result(b)
        ]
        assert isinstance(result, cc.ToolResult)
        assert result.is_error is (value is not None)
        malformed = not isinstance(value, bool | None)
        assert t.warnings == (
            (
                f"line 3: tool_result for t1 has is_error {value!r}, not true or false:"
                " counted as an error",
            )
            if malformed
            else ()
        )

    def test_a_negative_token_count_is_ignored_with_a_warning(self) -> None:
        """Usage with a count that is not one is dropped, and the line named."""
        s = Script()
        s.user("go")
        s.assistant(s.text("ok"), output=-5)
        t = cc.parse(s.dump().encode())
        assert [i.usage for i in t.items if isinstance(i, cc.Message)] == [None, None]
        assert t.warnings == ("line 2: usage output_tokens -5 is not a token count: usage ignored",)

    def test_a_tool_use_without_an_id_is_no_call(self) -> None:
        """An empty id cannot be resolved: the block is kept as text, with a warning."""
        s = Script()
        s.user("go")
        s.assistant(s.tool_use("", "Bash", command="ls"))
        t = cc.parse(s.dump().encode())
        (block,) = t.items[1].blocks  # type: ignore[union-attr]
        assert block == cc.Text(text='Bash {"command": "ls"}', kind="tool_use without an id")
        assert t.warnings == ("line 2: a Bash tool_use without an id is no call",)
