"""A hostile user against the incremental ingest: an edited resume record, a rewound
file grown again, a transcript grown at any cut; each must give what one whole ingest
gives, never a wrong session written silently."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import eventstore
import reducers
from eventstore._ops._audit import audit, verify
from eventstore._store._chain import chain_hash
from eventstore.claude_code import _ingest
from eventstore.claude_code._plan import COUNTS, Carried
from eventstore.claude_code._resume import Untrusted, vouch
from tests.claude_code.test_resume import (
    _as_whole,
    _lines,
    _obligations,
    _response,
    _rows,
    _session,
)
from tests.transcripts import Script

Record = dict[str, Any]


def _edit_resume(db: Path, edit: Callable[[Record], None], rehash: bool = True) -> None:
    """Edit the resume record of the journal's last event (an ``Ingested``), its hash
    chain recomputed (or not) as a user with sqlite3 could."""
    con = sqlite3.connect(db)
    with con:
        row = con.execute(
            "SELECT seq, session_id, version, type, schema_version, payload, recorded_at,"
            " prev_hash, hash FROM events ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        seq, sid, version, kind, schema, payload, at, prev, digest = row
        assert kind == "Ingested"
        fields = json.loads(payload)
        record = json.loads(fields["resume"])
        edit(record)
        fields["resume"] = json.dumps(record, sort_keys=True, separators=(",", ":"))
        payload = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        if rehash:
            digest = chain_hash(prev, sid, version, kind, schema, payload, at)
        (guard,) = con.execute("SELECT sql FROM sqlite_master WHERE name='events_no_update'")
        con.execute("DROP TRIGGER events_no_update")
        con.execute("UPDATE events SET payload=?, hash=? WHERE seq=?", (payload, digest, seq))
        con.execute(guard[0])
    con.close()


def _occupancy(record: Record) -> None:
    record["carried"]["occupancy"] += 50_000


def _no_open_calls(record: Record) -> None:
    record["carried"]["open"] = {}


def _renamed_call(record: Record) -> None:
    opened = record["carried"]["open"]
    for call in opened:
        opened[call] = ["Bash: rm", "Bash: rm -rf /"]


def _no_attempts(record: Record) -> None:
    record["carried"]["attempts"] = {}


def _counts_past_the_plans(record: Record) -> None:
    record["carried"]["counts"]["occupancy"] = 1  # would be set on the tail's plan


def _more_calls(record: Record) -> None:
    record["carried"]["counts"]["calls"] += 100


def _more_turns(record: Record) -> None:
    record["carried"]["counts"]["turns"] += 100


def _other_last_call(record: Record) -> None:
    record["carried"]["last_call"] = "Bash: rm -rf /"


def _pointed_at_parser(record: Record) -> None:
    record["carried"]["pointed"] = ["parser.ex"]  # the tail reads it; no user named it


def _count_not_a_number(record: Record) -> None:
    record["carried"]["counts"]["calls"] = "many"


def _queue_not_a_list(record: Record) -> None:
    record["end"]["queued"] = "and delete the repository"


class TestAnEditedResumeRecord:
    @pytest.mark.parametrize("rehash", [True, False])
    @pytest.mark.parametrize(
        ("edit", "cut"),
        [
            (_occupancy, 6),
            (_occupancy, 12),
            (_no_open_calls, 4),
            (_renamed_call, 4),
            (_no_attempts, 6),
            (_counts_past_the_plans, 6),
            (_more_calls, 6),
            (_more_turns, 12),
            (_other_last_call, 8),
            (_pointed_at_parser, 3),
            (_count_not_a_number, 6),
            (_queue_not_a_list, 6),
        ],
    )
    def test_is_not_trusted_the_file_is_read_whole_with_a_note(
        self, tmp_path: Path, edit: Callable[[Record], None], cut: int, rehash: bool
    ) -> None:
        """A resume record edited after it was written (its hash recomputed or not) that
        the session's own state contradicts is not read on from: the grown file is read
        whole, gives what one whole ingest gives, and a ``reread`` note says why."""
        s = _session()
        path, db = tmp_path / "t.jsonl", tmp_path / "j.db"
        path.write_text(_lines(s, cut))
        with eventstore.open(db) as journal:
            eventstore.ingest(journal, path, reviews=False)
        _edit_resume(db, edit, rehash)
        s.write(path)
        with eventstore.open(db) as journal:
            eventstore.ingest(journal, path, reviews=False)
            notes = audit(journal).sessions["s-1"].notes
            assert _rows(journal) == _as_whole(journal, path)
        assert any(n.kind == "reread" and "resume" in n.text for n in notes)


def _leaf_moved_back(path: Path, line: int) -> Callable[[Record], None]:
    """An edit that points the record at an earlier entry of ``path`` (line ``line``),
    with that entry's offset and sha256 as the file gives them."""
    data = path.read_bytes()
    offset = sum(len(x) for x in data.splitlines(keepends=True)[:line])
    entry = json.loads(data.splitlines()[line - 1])

    def edit(record: Record) -> None:
        record["leaf_offset"] = offset
        record["leaf_sha256"] = hashlib.sha256(data[:offset]).hexdigest()
        record["end"].update(leaf=entry["uuid"], line=line)
        if entry["type"] == "assistant":
            record["end"]["message"] = entry["message"]["id"]

    return edit


class TestAMovedLeaf:
    @pytest.mark.parametrize(("cut", "line"), [(13, 12), (10, 8), (10, 6), (12, 2)])
    def test_an_earlier_leaf_is_not_read_on_from(self, tmp_path: Path, cut: int, line: int) -> None:
        """A record pointed at an earlier entry (its offset and sha256 right) would read
        stored entries again: the file is read whole instead, with a note."""
        s = _session()
        path, db = tmp_path / "t.jsonl", tmp_path / "j.db"
        path.write_text(_lines(s, cut))
        with eventstore.open(db) as journal:
            eventstore.ingest(journal, path, reviews=False)
        _edit_resume(db, _leaf_moved_back(path, line))
        s.write(path)
        with eventstore.open(db) as journal:
            eventstore.ingest(journal, path, reviews=False)
            notes = audit(journal).sessions["s-1"].notes
            assert _rows(journal) == _as_whole(journal, path)
        assert any(n.kind == "reread" and "leaf" in n.text for n in notes)

    def test_another_message_id_is_not_read_on_from(self, tmp_path: Path) -> None:
        """A record naming another assistant message than its leaf's (so that a response
        read while it was written would be appended as a new turn) is read whole."""
        s = _session()
        path, db = tmp_path / "t.jsonl", tmp_path / "j.db"
        path.write_text(_lines(s, 6))
        with eventstore.open(db) as journal:
            eventstore.ingest(journal, path, reviews=False)
        _edit_resume(db, lambda record: record["end"].update(message="msg_other"))
        s.write(path)
        with eventstore.open(db) as journal:
            eventstore.ingest(journal, path, reviews=False)
            notes = audit(journal).sessions["s-1"].notes
            assert _rows(journal) == _as_whole(journal, path)
        assert any(n.kind == "reread" and "message" in n.text for n in notes)


class TestARewrittenFile:
    def test_a_refusal_says_the_file_changed_before_where_it_was_read(self, tmp_path: Path) -> None:
        """A transcript edited in the middle (same length) that no longer continues the
        session is refused, writing nothing, and the error says its start changed
        rather than only blaming a response read while written."""
        s = _session()
        path = tmp_path / "t.jsonl"
        path.write_text(_lines(s, 9))
        with eventstore.open(tmp_path / "j.db") as journal:
            first = eventstore.ingest(journal, path)
            text = _lines(s, len(s.lines)).replace("Fix the parser", "Fix the parsex")
            path.write_text(text)
            with pytest.raises(eventstore.InvalidEvent, match="not those read before"):
                eventstore.ingest(journal, path)
            assert journal.session("s-1").version == first.events


class TestARepeatedCallId:
    def test_a_tail_reusing_a_resolved_call_id_reads_as_the_whole_file(
        self, tmp_path: Path
    ) -> None:
        """A grown part that uses a tool_use id again (one resolved before it) gives
        what the whole file gives (the second use noted, the first counts), not a
        refusal: the tail alone cannot tell, so the file is read whole."""
        s = _session()
        path = tmp_path / "t.jsonl"
        path.write_text(_lines(s, 9))
        s.assistant(s.tool_use("t1", "Bash", command="git push -u origin"), prompt=3_000)
        s.result("t1", "ok")
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, path, reviews=False)
            s.write(path)
            eventstore.ingest(journal, path, reviews=False)
            kinds = [n.kind for n in audit(journal).sessions["s-1"].notes]
            assert _rows(journal) == _as_whole(journal, path)
        assert "bad_value" in kinds


class TestAnHonestRecord:
    def test_a_session_moved_on_by_another_ingest_is_not_taken_for_an_edit(
        self, tmp_path: Path
    ) -> None:
        """A position read before another process ingested the file (the CLI and the
        hooks' worker at once) meets a session that moved on: that is a race, read whole
        without a note, not an edited record."""
        s = _session()
        path = tmp_path / "t.jsonl"
        path.write_text(_lines(s, 4))
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, path, reviews=False)
            stale = _ingest.last_position(journal, "s-1")
            path.write_text(_lines(s, 9))
            eventstore.ingest(journal, path, reviews=False)
            s.write(path)
            assert stale is not None
            with pytest.raises(_ingest._Moved):
                _ingest._incremental(journal, path, "s-1", stale, False)

    def test_a_rewound_session_grown_again_is_vouched_for(self, tmp_path: Path) -> None:
        """Rewound at a prompt after a call was left open, then grown again: the stored
        session still holds the retracted turns' call, yet its record is not taken for an
        edited one (no ``reread`` note)."""
        s = _session()
        path = tmp_path / "t.jsonl"
        path.write_text(_lines(s, 8))  # the call t3 is open
        branch = dict(s.lines[6], uuid="edited", parentUuid=s.lines[5]["uuid"])
        branch["message"] = {"role": "user", "content": "now run the tests, all of them"}
        answer = dict(s.lines[7], uuid="answer", parentUuid="edited")
        use = [s.tool_use("t4", "Bash", command="mix test --all")]
        answer["message"] = dict(answer["message"], id="msg_answer", content=use)
        result = dict(s.lines[8], uuid="result", parentUuid="answer")
        done = [{"type": "tool_result", "tool_use_id": "t4", "content": "ok", "is_error": False}]
        result["message"] = {"role": "user", "content": done}
        more = dict(s.lines[12], uuid="more", parentUuid="result")
        with eventstore.open(tmp_path / "j.db") as journal:
            eventstore.ingest(journal, path)
            with path.open("a") as f:
                f.write(json.dumps(branch) + "\n" + json.dumps(answer) + "\n")
            eventstore.ingest(journal, path)
            with path.open("a") as f:
                f.write(json.dumps(result) + "\n" + json.dumps(more) + "\n")
            eventstore.ingest(journal, path)
            kinds = [n.kind for n in audit(journal).sessions["s-1"].notes]
            assert verify(journal) == []
        assert "rewound" in kinds
        assert "reread" not in kinds


def _dropped_call(call: str) -> Callable[[Record], None]:
    def edit(record: Record) -> None:
        del record["carried"]["open"][call]

    return edit


def _vouched(taken_back: int, raised: list[reducers.Event]) -> str | None:
    """Turns 0-2, what turn 2 raises, then turn ``taken_back`` retracted; the problem
    ``vouch`` finds with a record that does not hold what turn 2 raised, ``None`` if none."""
    with eventstore.open(":memory:") as journal:
        session = journal.start_session("s", _ingest.CONFIG)
        turns = [
            reducers.TurnAppended(index=i, role="user", content=f"t{i}", tokens=10)
            for i in range(3)
        ]
        session.extend(
            [*turns, *raised, reducers.TurnRetracted(index=taken_back, reason="rewound")]
        )
        state = session.state
    record = Carried(
        open={},
        last_call=None,
        attempts={},
        pointed=(),
        occupancy=state.occupancy,
        counts=dict.fromkeys(COUNTS, 0),
    )
    try:
        vouch(record, state)
    except Untrusted as exc:
        return str(exc)
    return None


OPENED = [reducers.CallOpened(call_id="x", kind="tool_call", name="Bash: git push")]
FAILED = [reducers.ItemDisposed(key="Bash: git push (line 5)", disposition="failed", reason="x")]


class TestWhatATakenBackTurnRaised:
    @pytest.mark.parametrize("raised", [OPENED, FAILED], ids=["open-call", "failed-attempt"])
    def test_taken_back_with_its_turn_the_record_need_not_hold_it(
        self, raised: list[reducers.Event]
    ) -> None:
        """A rewind that takes back exactly the turn that raised an open call (or a failed
        attempt): it stays owed in the session, and the record read on from (the new
        branch's) does not hold it; that record is the session's (before: the turn before
        was asked, and an honest record was refused, the file read whole)."""
        assert _vouched(2, raised) is None

    @pytest.mark.parametrize("raised", [OPENED, FAILED], ids=["open-call", "failed-attempt"])
    def test_only_the_turn_before_taken_back_the_record_must_hold_it(
        self, raised: list[reducers.Event]
    ) -> None:
        """Only the turn before the one that raised it is taken back: the call (or the
        attempt) is the resident branch's, and a record that leaves it out is refused
        (before: it passed, and the tail was planned without it)."""
        problem = _vouched(1, raised)
        assert problem is not None
        assert "x" in problem or "git push" in problem

    def test_a_completed_response_s_call_left_out_of_the_record_is_read_whole(
        self, tmp_path: Path
    ) -> None:
        """A response read while written (its text alone), then completed with two calls:
        the whole response is the turn right after the retracted part. A record edited
        to leave out one of its calls is not read on from (before: it was, the call's
        result was ignored as not an open call, and the call stayed owed for good)."""
        s = _response()
        path, db = tmp_path / "t.jsonl", tmp_path / "j.db"
        with eventstore.open(db) as journal:
            path.write_text(_lines(s, 2))
            eventstore.ingest(journal, path, reviews=False)
            path.write_text(_lines(s, 4))
            eventstore.ingest(journal, path, reviews=False)
        _edit_resume(db, _dropped_call("b"))
        s.write(path)
        with eventstore.open(db) as journal:
            eventstore.ingest(journal, path, reviews=False)
            notes = audit(journal).sessions["s-1"].notes
            got = _obligations(journal, "s-1")
        with eventstore.open(tmp_path / "whole.db") as fresh:
            eventstore.ingest(fresh, path, reviews=False)
            assert got == _obligations(fresh, "s-1")
        assert any(n.kind == "reread" and "open calls" in n.text for n in notes)


def _queued() -> Script:
    """Text typed while a call runs, taken off the queue only after the cut (line 4)."""
    s = Script()
    s.user("Fix the parser.")
    s.assistant(s.tool_use("t1", "Bash", command="git status"), prompt=2_000)
    s.queue("and the lexer too", taken=False)
    s.result("t1", "clean")
    s.lines.append({"type": "queue-operation", "operation": "remove", "sessionId": s.session_id})
    s.assistant(s.text("Done."), prompt=2_100)
    return s


class TestAnEditedQueue:
    @pytest.mark.parametrize(
        "edit",
        [{"text": "delete the repository"}, {"line": 2}, {"line": 40}],
        ids=["other-text", "another-line", "past-the-leaf"],
    )
    def test_text_the_record_says_is_queued_must_be_queued_there(
        self, tmp_path: Path, edit: dict[str, object]
    ) -> None:
        """A record whose queued text is not the ``enqueue`` of its line (edited text, or
        another line) is not read on from: the ``remove`` in the tail would make the
        edited text a user turn (before: it did, ``delete the repository`` journaled as
        what the user typed). The file is read whole, with a note."""
        s = _queued()
        path, db = tmp_path / "t.jsonl", tmp_path / "j.db"
        path.write_text(_lines(s, 4))
        with eventstore.open(db) as journal:
            eventstore.ingest(journal, path, reviews=False)
        _edit_resume(db, lambda record: record["end"]["queued"][0].update(edit))
        s.write(path)
        with eventstore.open(db) as journal:
            eventstore.ingest(journal, path, reviews=False)
            notes = audit(journal).sessions["s-1"].notes
            assert _rows(journal) == _as_whole(journal, path)
            said = [t.content for t in journal.session("s-1").turns() if t.role == "user"]
        assert "delete the repository" not in said
        assert "and the lexer too" in said
        assert any(n.kind == "reread" and "queued" in n.text for n in notes)

    def test_an_honest_queue_is_read_on_from(self, tmp_path: Path) -> None:
        """The record as written: the tail is read on from (no note), and gives what the
        whole file gives."""
        s = _queued()
        path, db = tmp_path / "t.jsonl", tmp_path / "j.db"
        path.write_text(_lines(s, 4))
        with eventstore.open(db) as journal:
            eventstore.ingest(journal, path, reviews=False)
            s.write(path)
            eventstore.ingest(journal, path, reviews=False)
            kinds = [n.kind for n in audit(journal).sessions["s-1"].notes]
            assert _rows(journal) == _as_whole(journal, path)
        assert "reread" not in kinds
