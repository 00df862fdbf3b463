"""Content blocks a hostile tester gave the reader: call ids that are not strings."""

from __future__ import annotations

from pathlib import Path

import eventstore
from reducers import Noted
from tests.transcripts import Script


class TestCallIdsThatAreNotStrings:
    def test_a_tool_use_whose_id_is_not_a_string_is_a_note(self, tmp_path: Path) -> None:
        """``"id": 5`` is no call, as an empty id is, and the journal records it."""
        s = Script()
        s.user("go")
        use = s.tool_use("t1", "Bash", command="ls")
        use["id"] = 5
        s.assistant(use)
        s.result("t1", "file.txt")
        with eventstore.open(tmp_path / "t.db") as journal:
            r = eventstore.ingest(journal, s.write(tmp_path / "t.jsonl"))
        assert r.calls == 0
        assert r.warnings[0] == "line 2: a Bash tool_use whose id is 5 is no call"

    def test_a_tool_result_whose_id_is_not_a_string_is_a_note(self, tmp_path: Path) -> None:
        """A failed result answering ``"tool_use_id": 5`` resolves nothing; the failure is
        not dropped silently: a note names its line."""
        s = Script()
        s.user("go")
        s.assistant(s.tool_use("t1", "Bash", command="git push"))
        result = s.result("t1", "fatal: no upstream", error=True)
        result["message"]["content"][0]["tool_use_id"] = 5
        with eventstore.open(tmp_path / "t.db") as journal:
            r = eventstore.ingest(journal, s.write(tmp_path / "t.jsonl"))
            notes = [e for e in journal.session("s-1").events() if isinstance(e, Noted)]
        assert r.failed == 0
        assert [(n.kind, n.line) for n in notes] == [("bad_value", 3)]
        assert notes[0].text == "a tool_result whose tool_use_id is 5 answers no call: ignored"
