"""Reading exported JSON Lines back: strict, line-numbered, never a raw Python error."""

from __future__ import annotations

import json
import re

import pytest

from eventstore._ops._transfer import read_sessions
from reducers import Checkpointed, InvalidEvent, TurnAppended

CHECKPOINT = '{"session_id": "s", "version": 1, "type": "Checkpointed", "payload": {"at": 0}}'
END = '{"end_of_session": "s", "events": 1, "hash": null}'


def _turn(**changes: object) -> str:
    payload = {"index": 0, "role": "user", "content": "hi", "tokens": 3, **changes}
    row = {"session_id": "s", "version": 1, "type": "TurnAppended", "payload": payload}
    return json.dumps(row)


class TestReadSessions:
    def test_exported_lines_parse(self) -> None:
        """Bytes and text lines both parse into each session's events."""
        assert read_sessions([CHECKPOINT.encode(), END.encode()]) == {"s": [Checkpointed(at=0)]}
        assert read_sessions([CHECKPOINT, END]) == {"s": [Checkpointed(at=0)]}

    @pytest.mark.parametrize(
        ("line", "message"),
        [
            (CHECKPOINT.replace('"s",', '"s", "session_id": "t",'), "duplicate key 'session_id'"),
            (CHECKPOINT.replace('{"at": 0}', '{"at": 0, "at": 1}'), "duplicate key 'at'"),
            (CHECKPOINT.replace('"version": 1', '"version": true'), "version True"),
            (CHECKPOINT.replace('"version": 1', '"version": 1.0'), "version 1.0"),
            (CHECKPOINT[:-1] + ', "schema_version": true}', "schema version True"),
            (CHECKPOINT[:-1] + ', "schema_version": 0}', "schema version 0"),
            (CHECKPOINT[:-1] + ', "extra": 1}', "unknown field(s) extra"),
            (CHECKPOINT.replace('"Checkpointed"', '["Checkpointed"]'), "type must be a string"),
            (CHECKPOINT.replace('{"at": 0}', '"{\\"at\\": 0}"'), "payload an object"),
            ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
            ('{"session_id": ' + "1" * 5000 + "}", "digits"),
            (_turn(tokens=2**64), "integer 18446744073709551616 does not fit in 64 bits"),
            (_turn(index=-(2**63) - 1), "does not fit in 64 bits"),
            (_turn(content="\ud800"), "lone surrogate"),
            (_turn(role="\udfff x"), "lone surrogate"),
        ],
    )
    def test_bad_lines_are_invalid_events(self, line: str, message: str) -> None:
        """Each malformed line is an InvalidEvent that names its line number."""
        with pytest.raises(InvalidEvent, match=f"^line 2: .*{re.escape(message)}"):
            read_sessions([b"\n", line.encode("utf-8", "surrogatepass")])

    def test_non_utf8_bytes_name_the_line_and_byte(self) -> None:
        """Bytes that are not UTF-8 are refused with the line and the byte position."""
        with pytest.raises(InvalidEvent, match=r"^line 1: not UTF-8 \(byte 3\)"):
            read_sessions([b'{"\xff": 1}'])

    def test_surrogate_pairs_and_big_numbers_in_text_are_fine(self) -> None:
        """An escaped astral character and long digit runs inside strings are ordinary text."""
        line = _turn(content="\U0001f600 " + "9" * 30, tokens=2**63 - 1)
        ((event,),) = read_sessions([line], require_trailer=False).values()
        assert isinstance(event, TurnAppended)
        assert (event.content, event.tokens) == ("\U0001f600 " + "9" * 30, 2**63 - 1)

    @pytest.mark.parametrize("lines", [[], [b""], [b"\n", b"   \n", b"\t\n"]])
    def test_nothing_to_import_is_an_error(self, lines: list[bytes]) -> None:
        """An empty or blank file is refused: there is nothing to import."""
        with pytest.raises(InvalidEvent, match="nothing to import"):
            read_sessions(lines)
