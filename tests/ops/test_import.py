"""Import: re-decided in a scratch journal without the write lock, committed whole or not at all."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

import eventstore
from bench.import_wait import build, measure
from eventstore._ops import NotVerified, _audit
from eventstore._ops._import import Import, Imported, created_journal
from eventstore._ops._transfer import export_lines, import_file, read_sessions
from eventstore._sqlite._recorder import SqliteRecorder
from reducers import Checkpointed, InvalidEvent, JournalError, SessionStarted
from tests.helpers import config, fill, new_session, rows

Rows = list[dict[str, Any]]


def _source(tmp_path: Path, *, marker_on_a: bool = False) -> Rows:
    """Session ``s`` exported: compaction A (n6), [a marker on A], turns, compaction B,
    a marker on B and a resume of it."""
    with eventstore.open(tmp_path / "source.db") as journal:
        s = new_session(journal, on_unsafe="spill")
        fill(s, 4)
        s.compact(tier=1, input=(0, 4), covers=(0, 4), tail_start=4, summary="A", tokens=5)
        if marker_on_a:
            s.emit_marker("n6")
        fill(s, 4)
        end = s.state.end
        b = s.compact(
            tier=1, input=(4, end), covers=(4, end), tail_start=end, summary="B", tokens=5
        )
        s.resume(s.emit_marker(b.node_id).marker_id)
        *lines, _ = [json.loads(line) for line in export_lines(journal, "s")]
        return lines  # the trailer left out: _write adds one


def _write(path: Path, lines: Rows) -> Path:
    """An edited history, written as by hand: without the export's hashes (which an
    edited line would no longer match), and a trailer that counts its lines."""
    for version, row in enumerate(lines, 1):
        row["version"] = version
        row.pop("hash", None)
        row.pop("recorded_at", None)
    trailer = {"end_of_session": "s", "events": len(lines), "hash": None}
    path.write_text("".join(json.dumps(row) + "\n" for row in [*lines, trailer]))
    return path


def _refuse_a(lines: Rows) -> Rows:
    """Compaction A edited to leave a seam hole: the checks now refuse it (and spill)."""
    a = next(row for row in lines if row["type"] == "Compacted")
    a["payload"]["covers_hi"] = 2
    return lines


def _append(kind: str, **payload: Any) -> Callable[[Rows], None]:
    return lambda lines: lines.append({"session_id": "s", "type": kind, "payload": payload})


def _edit_last(kind: str, **changes: Any) -> Callable[[Rows], None]:
    return lambda lines: [r for r in lines if r["type"] == kind][-1]["payload"].update(changes)


def _import(db: Path, dump: Path, *, allow_findings: bool = True) -> list[Imported]:
    with eventstore.open(db) as journal, open(dump, "rb") as f:
        return import_file(journal, f, allow_findings=allow_findings)


def _started() -> SessionStarted:
    return SessionStarted(**attrs.asdict(config()))


class TestRedecision:
    def test_plain_round_trip_is_not_redecided(self, tmp_path: Path) -> None:
        """An unedited export imports with nothing decided differently and nothing skipped."""
        lines = _source(tmp_path)
        (result,) = _import(tmp_path / "x.db", _write(tmp_path / "d.jsonl", lines))
        assert (result.redecided, result.skipped, result.events) == (0, (), len(lines))

    def test_what_the_refusal_made_impossible_is_skipped(self, tmp_path: Path) -> None:
        """A refused A takes the marker on it along; B, its marker and the resume still land."""
        lines = _refuse_a(_source(tmp_path, marker_on_a=True))
        (result,) = _import(tmp_path / "x.db", _write(tmp_path / "d.jsonl", lines))
        assert result.redecided == 2  # A, and the resume: its context no longer holds A
        assert [s.split(":")[0] for s in result.skipped] == ["v7 MarkerEmitted"]
        assert "'n6', which the re-decision removed" in result.skipped[0]
        # one event skipped, one more for the spill, a note per finding carried
        assert result.events == len(lines) + len(result.findings)
        assert len(result.findings) == 3  # A refused, the marker skipped, the resume

    def test_later_ids_follow_the_shift(self, tmp_path: Path) -> None:
        """A's refusal writes one event more (its spill): B's marker and resume follow B's id."""
        lines = _refuse_a(_source(tmp_path))
        (result,) = _import(tmp_path / "x.db", _write(tmp_path / "d.jsonl", lines))
        with eventstore.open(tmp_path / "x.db") as journal:
            session = journal.session("s")
            state, types = session.state, [type(e).__name__ for e in session.events()]
        (b,) = [n for n in state.nodes.values() if n.summary == "B"]
        (marker,) = state.markers.values()
        assert (b.node_id, marker.node_id, marker.valid) == ("n12", "n12", True)
        assert types[5:7] == ["Spilled", "CompactionRefused"]
        notes = len(result.findings)
        assert (types[-1 - notes], result.skipped) == ("Resumed", ())
        assert types[-notes:] == ["Noted"] * notes

    def test_a_cascade_is_skipped_whole(self, tmp_path: Path) -> None:
        """A compaction that replaces the refused node is skipped, and so is all that needs it."""
        lines = _refuse_a(_source(tmp_path, marker_on_a=True))
        _edit_last("Compacted", replaces=["n6"])(lines)
        (result,) = _import(tmp_path / "x.db", _write(tmp_path / "d.jsonl", lines))
        kinds = [s.split(":")[0] for s in result.skipped]
        assert kinds == ["v7 MarkerEmitted", "v12 Compacted", "v13 MarkerEmitted", "v14 Resumed"]

    @pytest.mark.parametrize(
        ("mutate", "message"),
        [
            (_append("CallResolved", call_id="nope", outcome="ok"), "v14: unknown or already"),
            (_append("Truncated", lo=0, hi=99, reason="budget"), "v14: truncation .* outside"),
            (_edit_last("MarkerEmitted", node_id="n99"), "v12: unknown node 'n99'"),
            (_edit_last("Resumed", marker_id="m99"), "v13: unknown marker 'm99'"),
        ],
    )
    def test_invalid_on_its_own_aborts_even_after_a_redecision(
        self, tmp_path: Path, mutate: Callable[[Rows], None], message: str
    ) -> None:
        """A command the file's own history cannot hold aborts the import, refusal or not."""
        lines = _refuse_a(_source(tmp_path))
        mutate(lines)
        with eventstore.open(tmp_path / "x.db") as journal:
            new_session(journal, "live")
        with pytest.raises(InvalidEvent, match=message):
            _import(tmp_path / "x.db", _write(tmp_path / "d.jsonl", lines))
        assert rows(tmp_path / "x.db", "SELECT DISTINCT session_id FROM events") == [("live",)]
        assert not list(tmp_path.glob("x.db.spills/*/*"))
        assert not list(tmp_path.glob(".x.db.import-*"))


class TestFindings:
    def test_a_redecided_session_is_refused_without_allow_findings(self, tmp_path: Path) -> None:
        """A file whose commands the checks decide differently now does not verify: refused,
        naming the version, and nothing is created."""
        dump = _write(tmp_path / "d.jsonl", _refuse_a(_source(tmp_path)))
        with pytest.raises(NotVerified, match=r"session 's' does not verify: replay v6: the f"):
            _import(tmp_path / "x.db", dump, allow_findings=False)
        assert rows(tmp_path / "x.db", "SELECT count(*) FROM events") == [(0,)]
        assert not list(tmp_path.glob(".x.db.import-*"))

    def test_carried_findings_are_notes_audit_lists(self, tmp_path: Path) -> None:
        """With allow_findings each finding is a Noted event of kind carried_finding."""
        dump = _write(tmp_path / "d.jsonl", _refuse_a(_source(tmp_path)))
        (result,) = _import(tmp_path / "x.db", dump)
        with eventstore.open(tmp_path / "x.db") as journal:
            notes = journal.recorder.audit_rows("s").notes
            assert _audit.audit(journal).findings
        assert [(n.kind, n.text) for n in notes] == [
            ("carried_finding", f) for f in result.findings
        ]
        assert result.findings[0].startswith("replay v6: the file records [Compacted]")

    def test_a_wrong_spill_sha256_is_a_finding(self, tmp_path: Path) -> None:
        """A Spilled line whose sha256 is not that of the turns it copies is named."""
        with eventstore.open(tmp_path / "source.db") as journal:
            s = new_session(journal)
            fill(s, 4)
            s.spill(0, 2)
            *lines, _ = [json.loads(line) for line in export_lines(journal, "s")]
        spilled = next(row for row in lines if row["type"] == "Spilled")
        spilled["payload"]["sha256"] = "0" * 64
        dump = _write(tmp_path / "d.jsonl", lines)
        with pytest.raises(NotVerified, match=r"Spilled \[0, 2\) records sha256 0000000000000000"):
            _import(tmp_path / "x.db", dump, allow_findings=False)


class TestLockAndAtomicity:
    def test_a_live_append_does_not_wait_for_the_decisions(self, tmp_path: Path) -> None:
        """While the import decides, another connection commits with no busy timeout at all."""
        lines = _source(tmp_path)
        db, dump = tmp_path / "x.db", _write(tmp_path / "d.jsonl", lines)
        agent = SqliteRecorder(db, busy_timeout=0.0)
        calls: list[int] = []

        def append_now(_: int) -> None:
            event = Checkpointed(at=0) if calls else _started()
            calls.append(agent.append("live", [event], expected_version=len(calls)))

        with eventstore.open(db) as journal, Import(db, read_sessions(dump.open("rb"))) as job:
            job.decide(journal, append_now)  # unedited: nothing to allow
            job.commit(journal)
        assert agent.head("live")[0] == len(calls) > 3
        assert agent.head("s")[0] == len(lines)

    def test_a_failed_commit_leaves_no_event_no_spill_no_scratch(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A copy that fails after the spills moved: no row, no spill file, no scratch folder."""
        lines = _refuse_a(_source(tmp_path))
        db, dump = tmp_path / "x.db", _write(tmp_path / "d.jsonl", lines)
        with eventstore.open(db) as journal:
            new_session(journal, "live")

        def broken(*_: object) -> None:
            raise JournalError("disk full (simulated)")

        monkeypatch.setattr(SqliteRecorder, "copy_session", broken)
        with pytest.raises(JournalError, match="simulated"):
            _import(db, dump)
        assert rows(db, "SELECT DISTINCT session_id FROM events") == [("live",)]
        assert [p for p in tmp_path.glob("x.db.spills/**/*") if p.is_file()] == []
        assert not list(tmp_path.glob(".x.db.import-*"))

    def test_a_failed_import_keeps_a_spill_file_it_shares(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A spill file another session already uses (same bytes, same name) survives a
        failed import of the same content under another id."""
        db, dump = tmp_path / "x.db", _write(tmp_path / "d.jsonl", _refuse_a(_source(tmp_path)))
        _import(db, dump)
        shared = [p for p in tmp_path.glob("x.db.spills/**/*") if p.is_file()]

        def broken(*_: object) -> None:
            raise JournalError("disk full (simulated)")

        monkeypatch.setattr(SqliteRecorder, "copy_session", broken)
        with eventstore.open(db) as journal, open(dump, "rb") as f, pytest.raises(JournalError):
            import_file(journal, f, rename="copy", allow_findings=True)
        assert [p for p in tmp_path.glob("x.db.spills/**/*") if p.is_file()] == shared
        monkeypatch.undo()
        with eventstore.open(db) as journal:
            assert journal.sessions() == ["s"]
            assert _audit.verify(journal) == []

    def test_the_spill_lands_beside_the_journal(self, tmp_path: Path) -> None:
        """A refusal decided in the scratch journal leaves its spill in the target's folder."""
        lines = _refuse_a(_source(tmp_path))
        _import(tmp_path / "x.db", _write(tmp_path / "d.jsonl", lines))
        (spill,) = [p for p in tmp_path.glob("x.db.spills/**/*") if p.is_file()]
        with eventstore.open(tmp_path / "x.db") as journal:
            (recorded,) = journal.session("s").state.spills
            assert spill == tmp_path / "x.db.spills" / recorded.handle
            assert journal.session("s").read_spill(recorded)  # reads back, checked

    def test_a_session_created_meanwhile_is_not_overwritten(self, tmp_path: Path) -> None:
        """Another writer starting the same session id during the decisions wins; import fails."""
        db, dump = tmp_path / "x.db", _write(tmp_path / "d.jsonl", _source(tmp_path))
        other = SqliteRecorder(db)

        def race(count: int) -> None:
            if count == 1:
                other.append("s", [_started()], expected_version=0)

        def run() -> None:
            with eventstore.open(db) as journal, Import(db, read_sessions(dump.open("rb"))) as job:
                job.decide(journal, race)
                job.commit(journal)

        with pytest.raises(InvalidEvent, match="different history"):
            run()
        assert rows(db, "SELECT count(*) FROM events") == [(1,)]

    def test_reimport_of_a_redecided_file_is_unchanged(self, tmp_path: Path) -> None:
        """A file whose commands were decided differently imports once; then it is a no-op."""
        db, dump = tmp_path / "x.db", _write(tmp_path / "d.jsonl", _refuse_a(_source(tmp_path)))
        _import(db, dump)
        before = rows(db)
        (again,) = _import(db, dump)
        assert (again.unchanged, rows(db)) == (True, before)

    def test_a_new_journal_is_removed_when_the_block_fails(self, tmp_path: Path) -> None:
        """created_journal deletes the file (and -wal/-shm) it made if the block fails."""
        with pytest.raises(JournalError), created_journal(tmp_path / "new.db"):
            raise JournalError("commit failed (simulated)")
        assert list(tmp_path.iterdir()) == []

    def test_a_journal_with_events_is_never_removed(self, tmp_path: Path) -> None:
        """created_journal leaves a journal that holds a session alone when the block fails."""
        db = tmp_path / "x.db"

        def fail_after_a_session() -> None:
            with created_journal(db) as journal:
                new_session(journal)
                raise JournalError("commit failed (simulated)")

        with pytest.raises(JournalError):
            fail_after_a_session()
        assert rows(db, "SELECT count(*) FROM events") == [(1,)]

    def test_a_missing_folder_is_a_clear_error(self, tmp_path: Path) -> None:
        """Importing into a folder that does not exist names the folder."""
        with pytest.raises(JournalError, match="no folder"):
            Import(tmp_path / "nope" / "x.db", {})


@pytest.mark.slow
class TestLiveAgent:
    def test_an_agent_appends_throughout_an_import(self, tmp_path: Path) -> None:
        """An agent process appending every 5 ms never fails while an import runs beside it.

        The same measurement at 250k events is ``make bench-import``.
        """
        dump = build(tmp_path / "source.db", 6_000)
        result = measure(dump, tmp_path / "target.db", 0.005)
        assert (result["import_exit"], result["failures"]) == (0, [])
        assert isinstance(result["appends"], int)
        assert result["appends"] > 10
