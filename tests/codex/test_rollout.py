"""The Codex rollout reader, on hand-written lines and the rollout the CLI wrote."""

from __future__ import annotations

import pytest

from eventstore.codex import (
    Compaction,
    Message,
    Output,
    parse,
    read,
)
from reducers import InvalidEvent
from tests.codex.conftest import FIXTURE
from tests.codex.lines import call, lines, msg, out


class TestRead:
    def test_the_cli_fixture_reads_whole(self) -> None:
        """The fixture the real CLI wrote: its items counted by hand."""
        rollout = read(FIXTURE)
        assert rollout.cli_version == "0.171.0"
        kinds = [type(i).__name__ for i in rollout.items]
        assert kinds.count("Call") == 3
        assert kinds.count("Output") == 3
        assert kinds.count("Compaction") == 1
        assert kinds.count("Aborted") == 1
        outputs = [i for i in rollout.items if isinstance(i, Output)]
        assert [(o.failed, o.exit_code, o.source) for o in outputs] == [
            (True, 1, "item_completed"),
            (False, 0, "item_completed"),
            (True, 2, "item_completed"),
        ]
        (compaction,) = [i for i in rollout.items if isinstance(i, Compaction)]
        assert compaction.kept is not None
        assert "Never modify files under /etc." in compaction.kept[1]

    def test_an_exit_code_event_decides_over_the_output_text(self) -> None:
        """``exec_command_end`` says how a call ended; the text is read only without it."""
        end = ("event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 3})
        second = [call("c2", "ls"), out("c2", "Process exited with code 2\nboom")]
        data = lines(call("c1", "make"), end, out("c1", "Exit code: 0"), *second)
        outputs = [i for i in parse(data).items if isinstance(i, Output)]
        assert [(o.failed, o.exit_code, o.source) for o in outputs] == [
            (True, 3, "exec_command_end"),
            (True, 2, "output_text"),
        ]

    def test_unknown_types_are_notes_with_counts(self) -> None:
        """A line type, item or event the reader does not know is passed over, noted."""
        odd = ("response_item", {"type": "web_search_call"})
        data = lines(odd, ("mystery", {}), odd, ("event_msg", {"type": "new_thing"}))
        notes = {(n.kind, n.text, n.line, n.count) for n in parse(data).notes}
        assert notes == {
            ("unknown_type", "response_item 'web_search_call': passed over", 2, 2),
            ("unknown_type", "line type 'mystery': passed over", 3, 1),
            ("unknown_type", "event_msg 'new_thing': passed over", 5, 1),
        }

    def test_a_cut_last_line_is_a_note(self) -> None:
        """A last line cut off mid-write is skipped with a note; the rest is read."""
        data = lines(msg("user", "hello")) + b'{"type": "respon'
        rollout = parse(data)
        assert [type(i) for i in rollout.items] == [Message]
        assert [(n.kind, n.line) for n in rollout.notes] == [("cut_last_line", 3)]

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            (b'{"type": "event_msg", "payload": {}}\n', "no session_meta line"),
            (b'{"type": "session_meta", "payload": {"id": "a b"}}\n', "not a session id"),
            (b'{"type": "session_meta", "payload": {"id": "s"}}\nnope\n{}\n', "line 2: not JSON"),
            (
                b'{"type": "session_meta", "payload": {"id": "s"}}\n[1]\n{}\n',
                "line 2: not a rollout",
            ),
            (b"\xff\xfe\n{}\n", "line 1: not UTF-8"),
        ],
    )
    def test_unsound_input_is_refused_naming_the_line(self, data: bytes, message: str) -> None:
        """What is not a rollout raises InvalidEvent saying where and why."""
        with pytest.raises(InvalidEvent, match=message):
            parse(data)
