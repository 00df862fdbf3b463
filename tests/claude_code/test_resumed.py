"""A resumed session's transcript (its first entries keep the older session's id): taken
up from its own ingest position, by the hooks' worker and by ``eventstore.ingest``."""

from __future__ import annotations

from pathlib import Path

import pytest

import eventstore
from eventstore._ops._audit import audit, verify
from eventstore.claude_code._hook import Folder
from eventstore.claude_code._ingest import guess_session, ingest_as
from tests.claude_code.test_resume import _as_whole, _no_whole_read, _rows
from tests.claude_code.test_worker import _run
from tests.transcripts import Script


def _resumed() -> Script:
    """Session s-2's transcript, its first entries carried over from older session s-1
    (``claude --resume`` writes the earlier session's entries first, with their id)."""
    s = Script(session_id="s-2")
    s.user("Fix the parser. Never modify files under /etc.")
    s.assistant(s.tool_use("t1", "Bash", command="git push"), prompt=2_000, output=20)
    s.result("t1", "Exit code 128\nfatal: no upstream", error=True)
    s.assistant(s.text("Read it."), prompt=2_300, output=8)
    for entry in s.lines[:3]:
        entry["sessionId"] = "s-1"
    s.user("now run the tests")
    s.assistant(s.text("ok running"), prompt=2_400, output=12)
    return s


def _rewind(s: Script) -> None:
    """The second prompt edited: a branch off the entry before it."""
    s.parent = s.lines[3]["uuid"]
    s.user("now run the linter instead")
    s.assistant(s.text("linting"), prompt=2_500, output=5)


def _grow(s: Script) -> None:
    s.user("thanks")
    s.assistant(s.text("welcome"), prompt=2_600, output=5)


def test_a_resumed_sessions_rewind_recorded_by_the_hooks_is_taken_up(tmp_path: Path) -> None:
    """Recorded by the Stop hook, rewound, recorded, grown, recorded: a 'rewound' note as
    the same file without the older ids gets, no hook error, and the last turn ingested
    (it was refused for good: the hook read the older session's position, not s-2's)."""
    journal, path = tmp_path / "j.db", tmp_path / "s-2.jsonl"
    s = _resumed()
    s.write(path)
    _run("record", journal, path, "s-2")
    _rewind(s)
    s.write(path)
    _run("record", journal, path, "s-2")
    _grow(s)
    s.write(path)
    _run("record", journal, path, "s-2")
    assert Folder(str(journal), "s-2").read("error") is None
    with eventstore.open(journal) as j:
        kinds = [n.kind for n in audit(j).sessions["s-2"].notes]
        assert "rewound" in kinds
        assert "mixed_sessions" in kinds  # the older ids are still noted
        assert [t.content for t in j.session("s-2").turns()][-1].endswith("welcome")
        assert not j.has_session("s-1")
        assert verify(j) == []


@pytest.mark.parametrize("wrong_guess", [False, True], ids=["guessed", "wrong-guess"])
def test_a_resumed_sessions_rewind_ingested_is_taken_up(tmp_path: Path, wrong_guess: bool) -> None:
    """``eventstore.ingest`` (no session named: the CLI) takes the rewind up the same way.
    ``wrong_guess``: the file's last line names another session (not of the main chain):
    the guess of the session to look up is wrong, the file is read whole as s-2, and
    s-2's own position still says the file only grew: the rewind is taken up, not
    refused."""
    path = tmp_path / "s-2.jsonl"
    s = _resumed()
    s.write(path)
    with eventstore.open(tmp_path / "j.db") as journal:
        eventstore.ingest(journal, path)
        _rewind(s)
        if wrong_guess:
            side = s.entry("attachment", attachment={"type": "todo", "content": []})
            side["sessionId"], side["parentUuid"] = "s-9", None
        s.write(path)
        result = eventstore.ingest(journal, path)
        assert result.session_id == "s-2"
        kinds = [n.kind for n in audit(journal).sessions["s-2"].notes]
        assert "rewound" in kinds
        if wrong_guess:
            assert not journal.has_session("s-9")
        else:
            contents = [t.content for t in journal.session("s-2").turns()]
            assert contents[-1].endswith("linting")


@pytest.mark.parametrize("named", [True, False], ids=["hook", "ingest"])
def test_a_resumed_sessions_grown_file_is_read_by_its_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: bool
) -> None:
    """Grown, a resumed session's file is read on from s-2's position (not read whole), into
    what a fresh ingest of the whole file gives, event for event; unchanged, it is only
    hashed."""
    path = tmp_path / "s-2.jsonl"
    s = _resumed()
    s.write(path)
    with eventstore.open(tmp_path / "j.db") as journal:

        def ingest() -> eventstore.IngestResult:
            if named:
                return ingest_as(journal, path, "s-2", reviews=False)
            return eventstore.ingest(journal, path, reviews=False)

        first = ingest()
        _grow(s)
        s.write(path)
        with monkeypatch.context() as patched:
            _no_whole_read(patched)
            grown = ingest()
            again = ingest()
        assert (grown.session_id, grown.appended_after) == ("s-2", first.events)
        assert (again.unchanged, again.events) == (True, grown.events)
        assert verify(journal) == []
        assert _rows(journal, "s-2") == _as_whole(journal, path, "s-2")


def test_the_guess_passes_over_a_line_nested_too_deep(tmp_path: Path) -> None:
    """A last line nested deeper than Python's decoder goes is no guess (it raised
    RecursionError out of the ingest, and out of the hooks' worker): the line before it
    gives the session."""
    path = tmp_path / "t.jsonl"
    deep = b'{"sessionId":"x","a":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    path.write_bytes(b'{"sessionId":"s-1","type":"user"}\n' + deep)
    assert guess_session(path) == "s-1"
