"""Snapshots: encoded round trip, and never trusted unless they check out."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from hypothesis import given

import eventstore
import reducers as r
from eventstore._ops._audit import verify
from eventstore._store._snapshots import SnapshotError, decode, encode
from eventstore.cli import main
from reducers._state import call_ids_sha256
from tests import strategies
from tests.helpers import config, fill, new_session, rows, run_step
from tests.targets import Target, on_both


def _snapshot_version(db: Path) -> int:
    return int(rows(db, "SELECT version FROM snapshots WHERE session_id = 's'")[0][0])


def _snapshotted(db: Path) -> str:
    """A session whose snapshot holds a pending, truncated constraint; returns its sha256."""
    with eventstore.open(db, snapshot_every=5) as journal:
        s = new_session(journal, "s")
        s.append_turn("user", "never modify files under /etc", 10)
        s.state_constraint("no-etc", "never modify files under /etc")
        fill(s, 6)
        s.truncate(0, 2, "budget")
        fill(s, 1)
        assert journal.recorder.load_snapshot("s") is not None
        return s.state.sha256


def _edit_header(db: Path, edit: object) -> None:
    """Rewrite the snapshot header with ``edit(header_dict)``, leaving its sha256 alone."""
    conn = sqlite3.connect(db)
    (state,) = conn.execute("SELECT state FROM snapshots").fetchone()
    header = json.loads(state)
    new = edit(header) if callable(edit) else edit
    conn.execute("UPDATE snapshots SET state = ?", (json.dumps(new).encode(),))
    conn.commit()
    conn.close()


def _drop_constraint(header: dict[str, object]) -> dict[str, object]:
    return {**header, "constraints": {}}


def _compact(s: eventstore.Session) -> eventstore.Node:
    end = s.state.end
    return s.compact(tier=1, input=(0, end), covers=(0, end), tail_start=end, summary="x", tokens=1)


class TestEncoding:
    @given(steps=strategies.scripts(max_steps=30))
    def test_round_trip(self, steps: list[strategies.Step]) -> None:
        """encode -> decode gives an equal state with the same sha256, and the head hash."""
        with tempfile.TemporaryDirectory() as tmp:
            journal = eventstore.open(Path(tmp) / "p.db", synchronous="normal")
            s = journal.start_session("p", config(on_unsafe="spill"))
            for kind, params in steps:
                run_step(s, kind, params)
            state = s.state
        header, chunks = encode(state, "ab" * 32)
        got = decode(header, ((name, data) for name, _, data in chunks))
        assert (got.state, got.state.sha256, got.sha256, got.head_hash, got.current) == (
            state,
            state.sha256,
            state.sha256,
            "ab" * 32,
            True,
        )

    def test_keeps_what_was_withdrawn(self) -> None:
        """encode -> decode carries the withdrawn spans and the sha256."""
        start = r.SessionStarted(**attrs.asdict(config()))
        turns = [r.TurnAppended(index=i, role="u", content="", tokens=5) for i in range(3)]
        state = r.fold([start, *turns, r.TurnRetracted(index=2, reason="")])
        header, chunks = encode(state, "cd" * 32)
        again = decode(header, ((name, data) for name, _, data in chunks)).state
        assert (again, again.sha256, again.withdrawn) == (state, state.sha256, ((2, 3),))


class TestTrust:
    def test_edited_snapshot_cannot_bypass_c5(
        self, db_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A snapshot edited to forget a pending constraint (sha256 column untouched) is
        ignored on reopen (logged), so C5 still refuses; verify reports it and exits 1."""
        expected = _snapshotted(db_path)
        version = _snapshot_version(db_path)
        _edit_header(db_path, _drop_constraint)
        with caplog.at_level(logging.WARNING, logger="tierlog"), eventstore.open(db_path) as j:
            s = j.session("s")
            assert s.state.sha256 == expected
            with pytest.raises(eventstore.UnrecoverableCompactionError) as err:
                _compact(s)
        assert [v.rule for v in err.value.violations] == ["C5"]
        assert "snapshot_ignored" in caplog.text
        with eventstore.open(db_path, readonly=True) as journal:
            found = verify(journal)
        assert [(f.check, f.version) for f in found] == [("snapshot", version)]
        assert "recorded sha256" in found[0].problem
        assert main(["verify", str(db_path)]) == 1

    def test_snapshot_of_another_session_is_refused(self, db_path: Path) -> None:
        """A snapshot copied from another session (with its own sha256) is not chained to
        this session's log: ignored and reported."""
        _snapshotted(db_path)
        with eventstore.open(db_path, snapshot_every=5) as journal:
            other = new_session(journal, "t")
            fill(other, 20)
            expected = other.state.sha256
        conn = sqlite3.connect(db_path)
        conn.execute("DELETE FROM snapshots WHERE session_id = 't'")
        conn.execute("DELETE FROM snapshot_chunks WHERE session_id = 't'")
        conn.execute("INSERT INTO snapshots SELECT 't', version, sha256, state FROM snapshots")
        conn.execute(
            "INSERT INTO snapshot_chunks SELECT 't', ledger, chunk, data FROM snapshot_chunks"
        )
        conn.commit()
        conn.close()
        with eventstore.open(db_path) as journal:
            assert journal.session("t").state.sha256 == expected
            found = verify(journal)
        assert [(f.check, f.session_id) for f in found] == [("snapshot", "t")]
        assert "not the one it was taken at" in found[0].problem

    @pytest.mark.parametrize(
        "header",
        [[], {"version": "x"}, {"lengths": None}, "garbage", {"version": 5, "lengths": {}}],
    )
    def test_wrong_shape_never_crashes(
        self, db_path: Path, capsys: pytest.CaptureFixture[str], header: object
    ) -> None:
        """A snapshot of the wrong shape: `tierlog state` replays instead of crashing,
        verify reports it."""
        expected = _snapshotted(db_path)
        version = _snapshot_version(db_path)
        _edit_header(db_path, header)
        assert main(["state", str(db_path), "s", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["sha256"] == expected
        assert main(["verify", str(db_path), "--json"]) == 1
        found = json.loads(capsys.readouterr().out)
        assert [(f["check"], f["version"]) for f in found] == [("snapshot", version)]

    def test_garbage_chunk_is_a_problem(self, db_path: Path) -> None:
        """A ledger chunk replaced by bytes of the wrong length is caught, not decoded."""
        expected = _snapshotted(db_path)
        conn = sqlite3.connect(db_path)
        conn.execute("UPDATE snapshot_chunks SET data = x'00ff00' WHERE ledger = 'tok_starts'")
        conn.commit()
        conn.close()
        with eventstore.open(db_path) as journal:
            assert journal.session("s").state.sha256 == expected
            assert [f.check for f in verify(journal)] == ["snapshot"]

    def test_rejected_snapshot_is_rewritten_whole(self, db_path: Path) -> None:
        """After ignoring a bad snapshot, the next one written is complete and trusted."""
        _snapshotted(db_path)
        _edit_header(db_path, _drop_constraint)
        with eventstore.open(db_path, snapshot_every=5) as journal:
            s = journal.session("s")
            fill(s, 1)
            checked = journal.snapshots.check("s")
            assert checked is not None
            assert checked.state == s.state
            assert verify(journal) == []


def _with_calls(db: Path) -> str:
    """A snapshotted session whose big ledgers all hold items; returns its sha256."""
    with eventstore.open(db, snapshot_every=5) as journal:
        s = new_session(journal, "s")
        for i in range(6):
            s.append_turn("user", f"t{i}", 3)
            s.open_call(f"c{i}", "tool_call", "x")
        fill(s, 6)  # the last snapshot holds every call: the log's tail is turns
        assert journal.recorder.load_snapshot("s") is not None
        return s.state.sha256


def _set_chunk(db: Path, ledger: str, edit: Callable[[bytes], bytes]) -> None:
    """Replace chunk 0 of ``ledger`` by ``edit(its bytes)``, the sha256 column untouched."""
    conn = sqlite3.connect(db)
    ((data,),) = conn.execute(
        "SELECT data FROM snapshot_chunks WHERE ledger = ? AND chunk = 0", (ledger,)
    ).fetchall()
    conn.execute(
        "UPDATE snapshot_chunks SET data = ? WHERE ledger = ? AND chunk = 0", (edit(data), ledger)
    )
    conn.commit()
    conn.close()


def _int_at(i: int, value: int) -> Callable[[bytes], bytes]:
    return lambda data: data[: 8 * i] + value.to_bytes(8, "little") + data[8 * (i + 1) :]


class TestHashedAsRead:
    @pytest.mark.parametrize(
        ("ledger", "edit"),
        [
            ("tok_starts", _int_at(1, 1)),
            ("turn_versions", _int_at(0, 7)),
            ("call_ids", lambda data: data.replace(b"c1", b"c9")),
        ],
    )
    def test_an_item_edited_in_place_is_not_trusted(
        self, db_path: Path, ledger: str, edit: Callable[[bytes], bytes]
    ) -> None:
        """A ledger item edited in place (same length, sha256 column untouched) decodes,
        but the bytes as read do not hash to the recorded sha256: replayed, reported."""
        expected = _with_calls(db_path)
        _set_chunk(db_path, ledger, edit)
        with eventstore.open(db_path) as journal:
            checked = journal.snapshots.check("s")
            assert checked is not None
            assert (checked.state, checked.problem) == (
                None,
                "its state does not hash to its recorded sha256 (edited?)",
            )
            assert journal.session("s").state.sha256 == expected
            assert [f.check for f in verify(journal)] == ["snapshot"]

    @pytest.mark.parametrize(
        ("form", "data", "problem"),
        [
            (2, b'{"c0": 1}', "not a JSON array"),
            (2, b'["c0", 1, "c2", "c3", "c4"]', "holds a non-string"),
            (2, b'"c0"', "not a JSON array"),
            (2, b'["c0", "\xff"]', "JSONDecodeError"),
            (3, b"c0\nc1\n\xff\nc3\nc4\nc5", "UnicodeDecodeError"),
            (3, b"c0\nc1", "ledger call_ids has 2 items, the header says 6"),
            (3, b"c0\nc1\nc2\nc3\nc4\nc5\nc6", "ledger call_ids has 7 items, the header says 6"),
        ],
    )
    def test_call_ids_of_another_shape_are_a_problem(
        self, db_path: Path, form: int, data: bytes, problem: str
    ) -> None:
        """Call ids stored as anything but what their format writes (FORMAT 2: a JSON
        array of strings; 3: UTF-8 lines, as many as the header says) are not a
        snapshot: the problem is named, the session replayed."""
        expected = _with_calls(db_path)
        if form == 2:
            _as_format_2(db_path)
        _set_chunk(db_path, "call_ids", lambda _: data)
        with eventstore.open(db_path) as journal:
            checked = journal.snapshots.check("s")
            assert checked is not None
            assert checked.state is None
            assert problem in (checked.problem or "")
            assert journal.session("s").state.sha256 == expected

    def test_a_trusted_snapshot_hashes_as_its_state(self, db_path: Path) -> None:
        """What the check hashed as it read is the sha256 of the state it built."""
        expected = _with_calls(db_path)
        with eventstore.open(db_path, snapshot_every=5) as journal:
            checked = journal.snapshots.check("s")
            assert checked is not None
            assert checked.state is not None
            assert checked.sha256 == checked.state.sha256
            assert journal.session("s").state.sha256 == expected


def _as_format_2(db: Path) -> None:
    """Rewrite the snapshot as tierlog wrote it before FORMAT 3: call ids as JSON arrays."""
    conn = sqlite3.connect(db)
    for k, data in conn.execute(
        "SELECT chunk, data FROM snapshot_chunks WHERE ledger = 'call_ids'"
    ).fetchall():
        ids = data.decode().split("\n")
        conn.execute(
            "UPDATE snapshot_chunks SET data = ? WHERE ledger = 'call_ids' AND chunk = ?",
            (r.canonical_json(ids), k),
        )
    conn.commit()
    conn.close()
    _edit_header(db, lambda h: {**h, "format": 2})


class TestFormats:
    @pytest.mark.parametrize("call_id", ["a\\b", "line\none", "\\n", "end\\", "é\n\\\\"])
    def test_call_ids_with_backslashes_and_newlines_round_trip(self, call_id: str) -> None:
        """Call ids are stored as lines: one holding a backslash or a newline is escaped,
        and reads back the same, with the state's sha256."""
        start = r.SessionStarted(**attrs.asdict(config()))
        opened = [r.CallOpened(call_id=c, kind="tool_call", name="x") for c in ("p", call_id)]
        state = r.fold([start, *opened])
        header, chunks = encode(state, "ab" * 32)
        got = decode(header, ((name, data) for name, _, data in chunks))
        assert (list(got.state.call_ids), got.sha256) == (["p", call_id], state.sha256)

    @pytest.mark.parametrize("line", [b"p\na\\qb", b"p\nab\\"])
    def test_an_unknown_escape_is_a_problem(self, line: bytes) -> None:
        """A stored call id with a backslash that escapes nothing known is not a snapshot."""
        start = r.SessionStarted(**attrs.asdict(config()))
        opened = [r.CallOpened(call_id=c, kind="tool_call", name="x") for c in ("p", "ab")]
        header, chunks = encode(r.fold([start, *opened]), "ab" * 32)
        rows = [(name, line if name == "call_ids" else data) for name, _, data in chunks]
        with pytest.raises(SnapshotError, match="escape"):
            decode(header, rows)

    def test_call_ids_are_split_only_when_read(self, db_path: Path) -> None:
        """A reopened session appends turns without splitting its snapshot's call ids;
        its first call reads them (a repeated id is still refused)."""
        expected = _with_calls(db_path)
        with eventstore.open(db_path) as journal:
            s = journal.session("s")
            loaded = s.state.call_ids._buf
            assert getattr(loaded, "load", None) is not None
            s.append_turn("user", "more", 2)
            assert loaded.load is not None  # type: ignore[attr-defined]
            with pytest.raises(eventstore.JournalError):
                s.open_call("c0", "tool_call", "again")
            s.open_call("c9", "tool_call", "x")
            assert list(s.state.call_ids) == [*(f"c{i}" for i in range(6)), "c9"]
            assert r.fold(s.events()).sha256 == s.state.sha256
            assert s.state_at(s.state.version - 2).sha256 == expected

    def test_a_format_2_snapshot_is_trusted_then_rewritten_whole(self, db_path: Path) -> None:
        """A snapshot written before FORMAT 3 (call ids as JSON) is read, checked and
        trusted; the next snapshot rewrites every chunk in the current format."""
        _with_calls(db_path)
        _as_format_2(db_path)
        with eventstore.open(db_path, snapshot_every=5) as journal:
            checked = journal.snapshots.check("s")
            assert checked is not None
            assert (checked.problem, checked.state is not None, checked.current) == (
                None,
                True,
                False,
            )
            s = journal.session("s")
            fill(s, 5)
            header = rows(db_path, "SELECT state FROM snapshots")[0][0]
            data = rows(db_path, "SELECT data FROM snapshot_chunks WHERE ledger = 'call_ids'")
            assert json.loads(header)["format"] == 3
            assert [d for (d,) in data] == [b"\n".join(f"c{i}".encode() for i in range(6))]
            again = journal.snapshots.check("s")
            assert again is not None
            assert again.state is not None
            assert (again.state.sha256, again.current) == (s.state_at(again.version).sha256, True)
            assert verify(journal) == []


class TestCallIdsWithNewlines:
    @on_both
    @pytest.mark.parametrize(
        ("stored", "edited"), [(b"a\\nb\nc", b"a\nb\\nc"), (b"a\nb\\nc", b"a\\nb\nc")]
    )
    def test_an_escape_moved_within_a_chunk_is_not_trusted(
        self, target: Target, stored: bytes, edited: bytes
    ) -> None:
        """Call ids ["a\\nb", "c"] and ["a", "b\\nc"] join alike with newlines, so the
        state hashes ids holding a newline by their JSON instead: moving the escape in
        the stored lines (same length, same count, no hash recomputed) is not trusted,
        and verify names it (it was trusted, then open_call("a") refused and
        open_call("a\\nb") committed a log that replay refuses). Both backends."""
        ids = ["a\nb", "c"] if stored.startswith(b"a\\") else ["a", "b\nc"]
        with target.open(snapshot_every=2) as journal:
            s = new_session(journal, "snap")
            for call_id in ids:
                s.open_call(call_id, "tool_call", "x")
            fill(s, 2)
        (data,) = target.rows("SELECT data FROM snapshot_chunks WHERE ledger = 'call_ids'")[0]
        assert bytes(data) == stored
        if target.backend == "sqlite":
            edit = f"UPDATE snapshot_chunks SET data = X'{edited.hex()}'"
        else:
            edit = f"UPDATE snapshot_chunks SET data = '\\x{edited.hex()}'::bytea"
        target.tamper(edit + " WHERE ledger = 'call_ids'")
        with target.open() as journal:
            checked = journal.snapshots.check("snap")
            assert checked is not None
            assert checked.state is None
            assert checked.problem == "its state does not hash to its recorded sha256 (edited?)"
            assert list(journal.session("snap").state.call_ids) == ids
            assert [f.check for f in verify(journal)] == ["snapshot"]

    def test_ids_without_a_newline_hash_as_every_release_did(self) -> None:
        """The state's call ids hash as their newline join (0.1's sha256 of a session
        stays its sha256) unless an id holds a newline."""
        plain, odd = ["toolu_1", "c\\2"], ["a\nb", "c"]
        assert call_ids_sha256(plain) == hashlib.sha256(b"toolu_1\nc\\2").hexdigest()
        assert call_ids_sha256(odd) != call_ids_sha256(["a", "b\nc"])
        assert call_ids_sha256([]) == hashlib.sha256(b"").hexdigest()


class TestLegacySnapshot:
    def test_unchained_snapshot_is_replayed_not_trusted(self, db_path: Path) -> None:
        """A 0.1 snapshot (no event hash) is not used on reopen, yet verify passes it when it
        agrees with the replay."""
        expected = _snapshotted(db_path)
        _edit_header(db_path, lambda h: {k: v for k, v in h.items() if k != "head_hash"})
        with eventstore.open(db_path) as journal:
            checked = journal.snapshots.check("s")
            assert checked is not None
            assert (checked.chained, checked.state, checked.problem) == (False, None, None)
            assert journal.session("s").state.sha256 == expected
            assert verify(journal) == []

    def test_fixture_from_0_1_reopens(self, tmp_path: Path) -> None:
        """The 0.1 journal's snapshots are 0.1 ones: reopening replays to the same state."""
        data = Path(__file__).resolve().parents[1] / "data" / "journal-0.1"
        db = tmp_path / "j.db"
        db.write_bytes((data / "journal-0.1.db").read_bytes())
        expected = json.loads((data / "expected.json").read_text())
        with eventstore.open(db) as journal:
            for sid, want in expected.items():
                assert journal.snapshots.check(sid) is not None
                assert journal.session(sid).state.sha256 == want["sha256"]
                assert r.fold(journal.session(sid).events()).sha256 == want["sha256"]
