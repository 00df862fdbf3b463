"""Incremental ingest: where an ingest got to is recorded, checked, and read on from."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import eventstore
import reducers
from eventstore._ops._audit import audit, verify
from eventstore.claude_code import _ingest, _plan
from eventstore.claude_code._ingest import Loaded
from reducers import Ingested, InvalidEvent, Noted
from tests import transcripts
from tests.transcripts import Script


def _session() -> Script:
    s = Script()
    s.user("Fix the parser. Never modify files under /etc.")
    s.assistant(s.tool_use("t1", "Bash", command="git push"), prompt=2_000, output=20)
    s.result("t1", "Exit code 128\nfatal: no upstream", error=True)
    s.assistant(s.tool_use("t2", "Read", file_path="/home/u/proj/lib/parser.ex"), prompt=2_100)
    s.result("t2", "defmodule Parser do\nend")
    s.assistant(s.text("Read it."), prompt=2_300, output=8)
    s.user("now run the tests")
    s.assistant(s.tool_use("t3", "Bash", command="mix test"), prompt=2_400, output=12)
    s.result("t3", "12 tests, 0 failures")
    s.boundary(2_500, "The user asked to fix the parser; git push failed (no upstream).")
    s.assistant(s.text("Continuing."), prompt=900, output=5)
    s.user("thanks")
    s.assistant(s.text("You're welcome."), prompt=950, output=6)
    return s


def _lines(s: Script, count: int) -> str:
    return "".join(json.dumps(e) + "\n" for e in s.lines[:count])


def _rows(journal: eventstore.Journal, sid: str = "s-1") -> list[tuple[str, str]]:
    return list(journal.recorder.read_payloads(sid))


def _as_whole(journal: eventstore.Journal, path: Path, sid: str = "s-1") -> list[tuple[str, str]]:
    """What a fresh ingest of ``path`` gives, with the session's own ingest records where
    they are (so that versions and node ids compare)."""
    plan = _ingest.load(path).plan
    return _ingest._fresh(sid, plan, _ingest._slots(_rows(journal, sid))).payloads


def _no_whole_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(path: str | Path, format: str = "claude-code") -> Loaded:  # noqa: A002
        raise AssertionError(f"{path} was read whole")

    monkeypatch.setattr(_ingest, "load", refused)


class TestWhereItGotTo:
    def test_an_ingest_ends_with_the_bytes_it_read(self, tmp_path: Path) -> None:
        """The session's last event is an Ingested naming the file's size, lines and sha256."""
        path = _session().write(tmp_path / "t.jsonl")
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, path)
            (last,) = list(journal.session("s-1").events(start=journal.session("s-1").version))
        data = path.read_bytes()
        assert isinstance(last, Ingested)
        assert (last.offset, last.lines) == (len(data), data.count(b"\n"))
        assert last.sha256 == hashlib.sha256(data).hexdigest()
        assert json.loads(last.resume)["end"]["leaf"] == _session().lines[-1]["uuid"]

    def test_a_cut_last_line_is_not_counted_as_read(self, tmp_path: Path) -> None:
        """A last line still being written ends what was read at the line before it."""
        whole = _session().write(tmp_path / "whole.jsonl").read_bytes()
        path = tmp_path / "t.jsonl"
        path.write_bytes(whole[:-20])
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, path)
            last = _ingest.last_position(journal, "s-1")
        assert last is not None
        assert last.offset == whole.rindex(b"\n", 0, len(whole) - 1) + 1


class TestReadingOnlyTheTail:
    def test_an_unchanged_file_is_checked_not_read(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Ingested again, an unchanged file is hashed, found unchanged, and nothing written."""
        path = _session().write(tmp_path / "t.jsonl")
        with eventstore.open(tmp_path / "j.db") as journal:
            first = eventstore.ingest(journal, path)
            _no_whole_read(monkeypatch)
            again = eventstore.ingest(journal, path)
            assert (again.unchanged, again.events, again.turns) == (True, first.events, first.turns)
            assert journal.session("s-1").version == first.events

    def test_every_cut_grows_by_its_tail_into_what_the_whole_file_gives(
        self, tmp_path: Path
    ) -> None:
        """Ingested at any line, then whole: the session verifies and is, event for event,
        what a fresh ingest of the whole file gives (its ingest records aside)."""
        s = _session()
        whole = s.write(tmp_path / "whole.jsonl")
        part = tmp_path / "part.jsonl"
        for cut in range(1, len(s.lines)):
            part.write_text(_lines(s, cut))
            with eventstore.open(tmp_path / f"g{cut}.db", synchronous="normal") as journal:
                eventstore.ingest(journal, part)
                eventstore.ingest(journal, whole)
                assert verify(journal) == [], cut
                assert _rows(journal) == _as_whole(journal, whole), cut

    def test_a_grown_file_is_not_read_whole(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Grown by a prompt, a call and the compaction, only the new lines are read."""
        s = _session()
        path = tmp_path / "t.jsonl"
        path.write_text(_lines(s, 6))
        with eventstore.open(tmp_path / "j.db") as journal:
            first = eventstore.ingest(journal, path)
            s.write(path)
            _no_whole_read(monkeypatch)
            grown = eventstore.ingest(journal, path)
            assert grown.appended_after == first.events
        monkeypatch.undo()
        with eventstore.open(tmp_path / "fresh.db") as journal:
            fresh = eventstore.ingest(journal, path)
        counts = ("turns", "calls", "failed", "rejected", "interruptions", "constraints")
        assert [getattr(grown, c) for c in counts] == [getattr(fresh, c) for c in counts]
        reviews = [(r.line, r.occupancy, r.marker_status, r.obligations) for r in grown.compactions]
        assert reviews == [
            (r.line, r.occupancy, r.marker_status, r.obligations) for r in fresh.compactions
        ]  # node ids aside: the ingest record before it took a version

    def test_a_hook_ingesting_a_copy_of_the_start_reads_on_from_it(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """What was read is told by its bytes, not the file's name: PostCompact's copy of
        the transcript's start, then the transcript itself."""
        s = _session()
        copy = tmp_path / "scratch" / "t.jsonl"
        copy.parent.mkdir()
        copy.write_text(_lines(s, 9))
        path = s.write(tmp_path / "t.jsonl")
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, copy, reviews=False)
            _no_whole_read(monkeypatch)
            assert eventstore.ingest(journal, path, reviews=False).appended_after


class TestReadWhole:
    def test_a_changed_start_is_read_whole_with_a_note_audit_shows(self, tmp_path: Path) -> None:
        """Bytes before where the last ingest got to changed (here: a line re-spaced): the
        file is read whole, a ``reread`` note says why, and audit shows it."""
        s = _session()
        path = tmp_path / "t.jsonl"
        path.write_text(_lines(s, 6))
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, path)
            text = _lines(s, len(s.lines))
            path.write_text(
                json.dumps(s.lines[0], indent=1).replace("\n", "") + text[text.index("\n") :]
            )
            eventstore.ingest(journal, path)
            notes = audit(journal).sessions["s-1"].notes
            assert [n.kind for n in notes] == ["reread"]
            assert "not those read before" in notes[0].text
            assert _rows(journal) == _as_whole(journal, path)
            assert verify(journal) == []

    def test_a_shorter_file_is_not_trusted(self, tmp_path: Path) -> None:
        """A file shorter than what was read is read whole: a cut copy is refused as before."""
        s = _session()
        path = s.write(tmp_path / "t.jsonl")
        with eventstore.open(tmp_path / "j.db") as journal:
            first = eventstore.ingest(journal, path)
            path.write_text(_lines(s, 6))
            with pytest.raises(eventstore.InvalidEvent, match="already holds more"):
                eventstore.ingest(journal, path)
            assert journal.session("s-1").version == first.events


class TestTakenUpAgain:
    def test_a_rewound_session_is_taken_up_again(self, tmp_path: Path) -> None:
        """A prompt edited (or rewound to) after it was ingested: its tail hangs off an
        earlier entry, so the file is read whole; the stored turns from that prompt on
        are retracted with a ``rewound`` note, and the new branch follows."""
        s = _session()
        path = tmp_path / "t.jsonl"
        path.write_text(_lines(s, 9))
        branch = dict(s.lines[6], uuid="edited", parentUuid=s.lines[5]["uuid"])
        branch["message"] = {"role": "user", "content": "now run the tests, all of them"}
        answer = dict(s.lines[7], uuid="answer", parentUuid="edited")
        text = [{"type": "text", "text": "Running them all."}]
        answer["message"] = dict(answer["message"], id="msg_answer", content=text)
        with eventstore.open(tmp_path / "j.db") as journal:
            first = eventstore.ingest(journal, path)
            with path.open("a") as f:
                f.write(json.dumps(branch) + "\n" + json.dumps(answer) + "\n")
            grown = eventstore.ingest(journal, path)
            resident = _resident(journal, "s-1")
            kinds = _kinds(journal, "s-1")
            assert verify(journal) == []
        assert grown.appended_after == first.events
        assert kinds == ["off_chain", "rewound"]
        assert "now run the tests" not in resident
        assert "now run the tests, all of them" in resident

    def test_a_response_read_while_written_is_completed(self, tmp_path: Path) -> None:
        """A stored assistant turn that the grown file gives more blocks (the ingest read
        the response while Claude Code wrote it, an entry a block): the part is retracted
        with a ``completed`` note and the whole response follows; the call the part
        opened is opened once, and resolved by its result."""
        s = _session()
        s.lines[3]["message"] = dict(s.lines[3]["message"], id=s.lines[1]["message"]["id"])
        s.lines[3]["parentUuid"] = s.lines[1]["uuid"]  # t2 in the same response as t1
        s.lines[2]["parentUuid"] = s.lines[3]["uuid"]
        s.lines[2], s.lines[3] = s.lines[3], s.lines[2]
        path = tmp_path / "t.jsonl"
        path.write_text(_lines(s, 2))
        with eventstore.open(tmp_path / "j.db") as journal:
            first = eventstore.ingest(journal, path)
            assert "t1" in journal.session("s-1").state.open_calls
            s.write(path)
            grown = eventstore.ingest(journal, path)
            resident = _resident(journal, "s-1")
            opened = [p for k, p in _rows(journal) if k == "CallOpened"]
            kinds = _kinds(journal, "s-1")
            assert verify(journal) == []
            assert journal.session("s-1").state.open_calls == {}
        whole = tmp_path / "whole.db"
        with eventstore.open(whole) as fresh:
            eventstore.ingest(fresh, path)
            expected = [t.content for t in fresh.session("s-1").turns()]
        assert grown.appended_after == first.events
        assert kinds == ["completed"]
        assert resident == expected
        assert len(opened) == len({*opened}) == 3

    def test_an_older_tierlogs_session_is_remapped(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A session an older tierlog wrote (no ingest position, its notes worded
        otherwise) is not the start of what this version gives: the grown file is taken
        up again with a ``remapped`` note instead of refused."""
        s = _session()
        s.lines[1]["message"]["content"][0]["id"] = ""  # a bad value: a note
        path = tmp_path / "t.jsonl"
        path.write_text(_lines(s, 6))
        with eventstore.open(tmp_path / "j.db") as journal:
            with monkeypatch.context() as older:
                older.setattr(_ingest, "recorded", lambda *_: None)
                older.setattr(
                    _plan,
                    "_noted",
                    lambda k, n, t, c=1: Noted(kind=k, text="old " + t, line=n, count=c),
                )
                eventstore.ingest(journal, path)
            s.write(path)
            grown = eventstore.ingest(journal, path)
            kinds = [n.kind for n in audit(journal).sessions["s-1"].notes]
            assert verify(journal) == []
        assert grown.appended_after is not None
        assert "remapped" in kinds


class TestCompletedTwice:
    """A response read while it was written, and read again later: the session reads on
    and ends as a fresh ingest of the whole file does."""

    @pytest.mark.parametrize(
        "cuts",
        [
            pytest.param((2, 4), id="text-then-whole-response"),
            pytest.param((3, 4), id="a-call-then-whole-response"),
            pytest.param((3, 5), id="a-call-then-a-result"),
        ],
    )
    def test_a_completed_session_reads_on_when_the_file_grows(
        self, tmp_path: Path, cuts: tuple[int, ...]
    ) -> None:
        """Completed with a call still open, the next growth is read on from: the calls the
        response opened are the session's own (before, the resume record was refused as
        not the session's, the file read whole and refused for good)."""
        got, want, kinds = _cut_and_grown(tmp_path, _response(), cuts)
        assert got == want
        assert "reread" not in kinds

    def test_a_response_read_at_three_points_is_completed_each_time(self, tmp_path: Path) -> None:
        """Read after its text, after its first call, after its second, then whole: each
        ingest completes it, no call is opened twice (before: ``call 'a' was already
        opened`` at the third, and every ingest after it refused)."""
        got, want, kinds = _cut_and_grown(tmp_path, _response(), (2, 3, 4))
        assert got == want
        assert kinds.count("completed") == 2

    def test_a_response_with_results_between_its_calls_read_at_each_call(
        self, tmp_path: Path
    ) -> None:
        """Claude Code writes a call's result before the response's next call (as 258c7280
        does): read after each call, the first call is opened once (before: the third
        ingest raised ``call 'a' was already opened`` and the session was refused for
        good)."""
        s = _between()
        got, want, kinds = _cut_and_grown(tmp_path, s, (3, 5))
        assert got == want
        assert kinds.count("completed") == 2

    def test_a_failure_read_in_the_part_is_held_by_the_whole_response(self, tmp_path: Path) -> None:
        """A failed call's result read with the part is held by its turn after the
        completion, as in a fresh ingest: not owed (before: its fact stayed at the
        retracted result, so ``tierlog owed`` and the hooks re-told it for good)."""
        got, want, _ = _cut_and_grown(tmp_path, _between(), (5,))
        assert got == want
        assert want[4] == []

    def test_a_completed_session_read_whole_later_is_read_on(self, tmp_path: Path) -> None:
        """Results that hang off their own call (parallel tool use, as Claude Code writes
        them) make the ingest after a completion read the file whole: the session's
        resident turns are the start of what it gives, and the rest is appended (before:
        refused for good, ``already exists with other content``)."""
        s = _response()
        s.lines[4]["parentUuid"] = s.lines[2]["uuid"]  # result a off call a
        s.lines[5]["parentUuid"] = s.lines[3]["uuid"]  # result b off call b
        progress = dict(s.lines[2], type="progress", uuid="p1", parentUuid=s.lines[3]["uuid"])
        del progress["message"]
        s.lines.insert(5, progress)  # then only a progress entry off call b: no turn
        got, want, kinds = _cut_and_grown(tmp_path, s, (3, 5, 6))
        assert got == want
        assert kinds == ["completed"]

    def test_another_response_that_starts_with_the_stored_one_is_a_rewind(
        self, tmp_path: Path
    ) -> None:
        """The same prompt sent again (a rewind) and a new response that begins with the
        stored one's text: the stored turns are taken back as ``rewound``, not as a
        response read while it was written (its first entry was not read before)."""
        s = Script()
        s.user("Fix the parser.")
        s.assistant(s.text("Sure."), prompt=2_000, output=3)
        s.parent = None  # the rewind: the same prompt off the first one's parent
        s.user("Fix the parser.")
        s.assistant(s.text("Sure."), s.tool_use("x", "Bash", command="rm -rf build"), prompt=2_000)
        got, want, kinds = _cut_and_grown(tmp_path, s, (2,))
        assert got == want
        assert kinds == ["off_chain", "rewound"]


def _between() -> Script:
    """One response whose three calls' results Claude Code wrote between them."""
    s = Script()
    s.user("Fix the parser.")
    s.assistant(s.tool_use("a", "Bash", command="git status"), prompt=2_000)
    s.result("a", "clean")
    s.assistant(s.tool_use("b", "Bash", command="git push"), prompt=2_000)
    s.result("b", "Exit code 1\nfatal: no upstream", error=True)
    s.assistant(s.tool_use("c", "Read", file_path="/home/u/proj/x.py"), prompt=2_000)
    s.result("c", "print(1)")
    s.assistant(s.text("Done."), prompt=2_200, output=5)
    for line in (3, 5):  # one response, message id and all
        s.lines[line]["message"]["id"] = s.lines[1]["message"]["id"]
    return s


def _response() -> Script:
    """One response in three entries (text, two calls), its results, then one more turn."""
    s = Script()
    s.user("Fix the parser.")
    s.assistant(
        s.text("Looking."),
        s.tool_use("a", "Bash", command="git push"),
        s.tool_use("b", "Read", file_path="/home/u/proj/x.py"),
        prompt=2_000,
        output=30,
    )
    s.result("a", "Exit code 128\nfatal: no upstream", error=True)
    s.result("b", "print(1)")
    s.user("thanks")
    s.assistant(s.text("ok"), prompt=2_100, output=5)
    return s


def _unended(lines: list[bytes], cut: int) -> bytes:
    """The first ``cut`` lines, then the next one whole but for its newline: Claude Code
    writes an entry, then its newline, and a read in between sees the entry whole."""
    return b"".join(lines[:cut]) + lines[cut].rstrip(b"\r\n ")


class TestALineReadBeforeItsNewline:
    @pytest.mark.parametrize("newline", ["\n", "\r\n", " \n"])
    def test_every_cut_grows_by_its_tail_into_what_the_whole_file_gives(
        self, tmp_path: Path, newline: str
    ) -> None:
        """Read at each line before its newline, then whole: the newline (after blanks,
        too) ends the line read, not a line of its own; event for event what a fresh
        ingest gives, no line named one too far, no note."""
        lines = [(json.dumps(e) + newline).encode() for e in _session().lines]
        whole, part = tmp_path / "whole.jsonl", tmp_path / "part.jsonl"
        whole.write_bytes(b"".join(lines))
        for cut in range(1, len(lines)):
            part.write_bytes(_unended(lines, cut))
            with eventstore.open(tmp_path / f"g{cut}.db", synchronous="normal") as journal:
                eventstore.ingest(journal, part)
                part.write_bytes(b"".join(lines))
                eventstore.ingest(journal, part)
                assert verify(journal) == [], cut
                assert _rows(journal) == _as_whole(journal, whole), cut
                assert _kinds(journal, "s-1") == [], cut

    def test_only_the_tail_is_read(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """The leaf read before its newline: the grown file is read on from that newline."""
        s = _session()
        lines = [(json.dumps(e) + "\n").encode() for e in s.lines]
        path = tmp_path / "t.jsonl"
        path.write_bytes(_unended(lines, 6))  # line 7, the user's second prompt: the leaf
        with eventstore.open(tmp_path / "j.db") as journal:
            first = eventstore.ingest(journal, path)
            s.write(path)
            _no_whole_read(monkeypatch)
            assert eventstore.ingest(journal, path).appended_after == first.events
            monkeypatch.undo()
            assert _rows(journal) == _as_whole(journal, path)

    def test_the_session_is_read_whole_later(self, tmp_path: Path) -> None:
        """Read on past a line read before its newline, the file edited later is read
        whole with a ``reread`` note (not refused: what is stored is what it gives)."""
        s = _session()
        lines = [(json.dumps(e) + "\n").encode() for e in s.lines]
        path = tmp_path / "t.jsonl"
        path.write_bytes(_unended(lines, 6))
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, path)
            path.write_bytes(b"".join(lines))
            eventstore.ingest(journal, path)
            path.write_bytes(b"".join(lines).replace(b"/home/u/proj", b"/home/u/proX", 1))
            eventstore.ingest(journal, path)
            assert _kinds(journal, "s-1") == ["reread"]
            assert verify(journal) == []

    def test_a_line_with_more_to_it_now_is_refused(self, tmp_path: Path) -> None:
        """The line read before its newline has more than blanks before it now: not the
        line read, so the file is read whole and refused (InvalidEvent saying why),
        writing nothing."""
        lines = [(json.dumps(e) + "\n").encode() for e in _session().lines]
        path = tmp_path / "t.jsonl"
        path.write_bytes(_unended(lines, 6))
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, path)
            before = _rows(journal)
            path.write_bytes(_unended(lines, 6) + b' {"type":"tag"}\n' + b"".join(lines[7:]))
            with pytest.raises(InvalidEvent, match="line 7 was read before its end"):
                eventstore.ingest(journal, path)
            assert _rows(journal) == before

    def test_each_cut_of_a_real_transcript(self, tmp_path: Path) -> None:
        """``tool_heavy`` read at every line before its newline, then whole: event for
        event a fresh ingest's (or completed, where the cut is inside a response)."""
        path = transcripts.TOOL_HEAVY
        lines = path.read_bytes().splitlines(keepends=True)
        part = tmp_path / path.name
        for cut in range(1, len(lines)):
            part.write_bytes(_unended(lines, cut))
            with eventstore.open(tmp_path / f"{cut}.db", synchronous="normal") as journal:
                try:
                    sid = eventstore.ingest(journal, part, reviews=False).session_id
                except InvalidEvent:  # no user or assistant entry yet
                    continue
                part.write_bytes(b"".join(lines))
                eventstore.ingest(journal, part, reviews=False)
                assert verify(journal) == [], cut
                if "completed" in _kinds(journal, sid):  # cut inside a response
                    assert _resident(journal, sid) == _whole_turns(tmp_path, part, sid), cut
                    continue
                assert _rows(journal, sid) == _as_whole(journal, part, sid), cut


def _obligations(journal: eventstore.Journal, sid: str) -> tuple[object, ...]:
    """The resident turns, open calls, dispositions and pending rules of a session."""
    state = journal.session(sid).state
    return (
        _resident(journal, sid),
        {c: o.name for c, o in state.open_calls.items()},
        {k: (f.disposition, f.reason) for k, f in state.dispositions.items()},
        {k: c.text for k, c in state.constraints.items()},
        [o.key for o in journal.session(sid).owed()],
    )


def _cut_and_grown(
    tmp_path: Path, s: Script, cuts: tuple[int, ...]
) -> tuple[tuple[object, ...], tuple[object, ...], list[str]]:
    """Ingest the first ``cuts`` lines of ``s`` in turn, then all of it: the session's
    obligations, a fresh ingest's, and the notes' kinds (``verify`` must pass)."""
    path = tmp_path / "t.jsonl"
    with eventstore.open(tmp_path / "j.db") as journal:
        for count in cuts:
            path.write_text(_lines(s, count))
            eventstore.ingest(journal, path)
        s.write(path)
        eventstore.ingest(journal, path)
        assert verify(journal) == []
        got, kinds = _obligations(journal, "s-1"), _kinds(journal, "s-1")
    with eventstore.open(tmp_path / "whole.db") as fresh:
        eventstore.ingest(fresh, path)
        want = _obligations(fresh, "s-1")
    return got, want, kinds


class TestRealTranscripts:
    @pytest.mark.parametrize("name", [p.name for p in transcripts.real_sessions()] or ["none"])
    def test_each_grows_by_its_tail_into_what_the_whole_file_gives(
        self, tmp_path: Path, name: str
    ) -> None:
        """Each real session cut at 90% and 99% of its bytes (where that ingests), then
        whole: event for event what a fresh ingest gives."""
        path = transcripts.real(name)
        data = path.read_bytes()
        part = tmp_path / name
        for share in (0.9, 0.99):
            part.write_bytes(data[: data.rindex(b"\n", 0, int(len(data) * share)) + 1])
            with eventstore.open(tmp_path / f"{share}.db", synchronous="normal") as journal:
                sid = eventstore.ingest(journal, part, reviews=False).session_id
                part.write_bytes(data)
                eventstore.ingest(journal, part, reviews=False)
                if "completed" in _kinds(journal, sid):  # cut inside a response
                    assert _resident(journal, sid) == _whole_turns(tmp_path, part, sid)
                    assert verify(journal) == []
                    continue
                assert _rows(journal, sid) == _as_whole(journal, part, sid)


def _kinds(journal: eventstore.Journal, sid: str) -> list[str]:
    return [n.kind for n in audit(journal).sessions[sid].notes]


def _resident(journal: eventstore.Journal, sid: str) -> list[str]:
    session = journal.session(sid)
    withdrawn = session.state.withdrawn
    return [t.content for t in session.turns() if not reducers.in_spans(withdrawn, t.index)]


def _whole_turns(tmp_path: Path, path: Path, sid: str) -> list[str]:
    """The turns a fresh ingest of ``path`` gives (none retracted)."""
    with eventstore.open(tmp_path / "whole.db", synchronous="normal") as journal:
        eventstore.ingest(journal, path, reviews=False)
        return _resident(journal, sid)


class TestMixedSessionIds:
    def test_a_chain_that_mixes_session_ids_is_noted(self, tmp_path: Path) -> None:
        """Entries of the main chain written under another sessionId (a resumed session's
        file carrying on an older one) are read as the leaf's session, with a note audit
        shows, naming the first such line and how many there are."""
        s = _session()
        for entry in s.lines[:4]:
            entry["sessionId"] = "older-1"
        path = s.write(tmp_path / "t.jsonl")
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, path)
            (note,) = audit(journal).sessions["s-1"].notes
        assert (note.kind, note.line) == ("mixed_sessions", 1)
        assert "'older-1'" in note.text
        assert note.count == 4

    def test_a_tail_under_another_session_id_is_read_whole(self, tmp_path: Path) -> None:
        """A tail whose chain entries carry another sessionId is not read alone: the whole
        file is, and the note counts every such entry."""
        s = _session()
        path = tmp_path / "t.jsonl"
        path.write_text(_lines(s, 6))
        for entry in s.lines[6:9]:
            entry["sessionId"] = "other-2"
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, path)
            s.write(path)
            eventstore.ingest(journal, path)
            notes = [n for n in audit(journal).sessions["s-1"].notes if n.kind == "mixed_sessions"]
        assert [(n.line, n.count) for n in notes] == [(7, 3)]
