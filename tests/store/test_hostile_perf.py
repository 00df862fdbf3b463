"""Hostile checks of the performance work of issue 15: tampered journals read by the
streamed recorder and the written-out chain walk, snapshot chunks cut elsewhere, the
writer connection that skips CHECK constraints, and states shared between threads."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eventstore
from eventstore._sqlite._recorder import PAGE
from eventstore._store._chain import GENESIS, ChainWalk, chain_hash
from eventstore._store._snapshots import CHUNK
from eventstore.cli import main
from reducers import CallOpened, ConstraintStated, TurnAppended
from tests.helpers import behind_its_back, fill, new_session

SID = "s"
T = TypeVar("T")


def _tamper(db: Path, edit: Callable[[sqlite3.Connection], object], *, rehash: bool) -> None:
    """Edit rows behind tierlog's back (triggers dropped, CHECKs off, the triggers put
    back), then, if asked, forge the whole chain again so only the edit can be found."""
    with behind_its_back(db) as conn:
        edit(conn)
        if rehash:
            prev = GENESIS
            for seq, version, kind, schema, payload, at in conn.execute(
                "SELECT seq, version, type, schema_version, payload, recorded_at FROM events"
                " WHERE session_id = ? ORDER BY version",
                (SID,),
            ).fetchall():
                digest = chain_hash(prev, SID, version, kind, schema, payload, at)
                conn.execute(
                    "UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, digest, seq)
                )
                prev = digest


def _payload(version: int, payload: str) -> Callable[[sqlite3.Connection], None]:
    def edit(conn: sqlite3.Connection) -> None:
        conn.execute(
            "UPDATE events SET payload = ? WHERE session_id = ? AND version = ?",
            (payload, SID, version),
        )

    return edit


def _not_utf8(version: int) -> Callable[[sqlite3.Connection], None]:
    def edit(conn: sqlite3.Connection) -> None:
        conn.execute(
            "UPDATE events SET payload = CAST(X'7B2261223A22FF227D' AS TEXT)"
            " WHERE session_id = ? AND version = ?",
            (SID, version),
        )

    return edit


def _journal(db: Path, turns: int = 20) -> None:
    with eventstore.open(db) as journal:
        fill(new_session(journal, SID), turns)


def _until_error(items: Iterable[T]) -> list[T]:
    """The items read before an ``IntegrityError`` (a row not UTF-8), which must come."""
    seen: list[T] = []
    with pytest.raises(eventstore.IntegrityError, match="not UTF-8"):  # noqa: PT012 - what came before the error counts
        for item in items:
            seen.append(item)
    return seen


def _verify(
    capsys: pytest.CaptureFixture[str], db: Path
) -> tuple[int, list[tuple[str, int | None]]]:
    code = main(["verify", str(db), "--json"])
    out, err = capsys.readouterr()
    assert "internal error" not in err
    found = [(f["check"], f["version"], f["problem"]) for f in json.loads(out or "[]")]
    return code, [(check, version) for check, version, _ in found]


class TestStreamedReads:
    def test_a_row_that_is_not_utf8_hides_no_earlier_finding(
        self, db_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """verify names an edited payload at v5 even when v17 (in the same fetched batch)
        holds bytes that are not UTF-8, as it did before reads were batched."""
        _journal(db_path)
        _tamper(db_path, _payload(5, '{"content": "x", "index": 3, "role": "user", "tokens": 1}'),
                rehash=False)  # fmt: skip
        _tamper(db_path, _not_utf8(17), rehash=False)
        assert _verify(capsys, db_path) == (1, [("chain", 5)])

    def test_a_row_that_is_not_utf8_is_a_finding_at_its_version(
        self, db_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A row SQLite cannot hand over as text is a chain finding (exit 1) naming its
        version, not a database error; reading the session is an IntegrityError."""
        _journal(db_path)
        _tamper(db_path, _not_utf8(17), rehash=False)
        assert _verify(capsys, db_path) == (1, [("chain", 17)])
        with (
            eventstore.open(db_path, snapshot_every=0) as journal,
            pytest.raises(eventstore.IntegrityError, match=r"v17 \(a stored text is not UTF-8"),
        ):
            list(journal.session(SID).events())

    def test_the_rows_before_an_undecodable_row_are_read_before_the_error(
        self, db_path: Path
    ) -> None:
        """Reading a session yields every row before one SQLite cannot hand over, then
        fails: a batch is not lost whole."""
        _journal(db_path)
        _tamper(db_path, _not_utf8(17), rehash=False)
        with eventstore.open(db_path) as journal:
            assert _until_error(r.version for r in journal.recorder.read(SID)) == list(range(1, 17))
            types = _until_error(t for t, _ in journal.recorder.read_payloads(SID))
            assert types == ["SessionStarted"] + ["TurnAppended"] * 15

    def test_an_undecodable_first_row_of_a_batch_still_fails(self, db_path: Path) -> None:
        """A bad row at the start of a later batch is an error, never an early end."""
        _journal(db_path, turns=PAGE + 100)
        _tamper(db_path, _not_utf8(PAGE + 1), rehash=False)
        with eventstore.open(db_path, snapshot_every=0) as journal:
            seen = _until_error(r.version for r in journal.recorder.read(SID))
        assert seen == list(range(1, PAGE + 1))

    def test_gaps_in_the_versions_are_read_past_at_once(
        self, db_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Rows deleted, and one moved to a version far beyond the rest, are read as
        stored (no page scan of the empty versions between), and verify names the
        first missing version."""
        _journal(db_path, turns=1_200)

        def edit(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM events WHERE session_id = ? AND version BETWEEN 5 AND 600",
                         (SID,))  # fmt: skip
            conn.execute("UPDATE events SET version = ? WHERE session_id = ? AND version = 700",
                         (2**62 - 1, SID))  # fmt: skip

        _tamper(db_path, edit, rehash=False)
        with eventstore.open(db_path) as journal:
            versions = [r.version for r in journal.recorder.read(SID)]
            assert len(list(journal.recorder.read_payloads(SID))) == len(versions)
        assert versions == [*range(1, 5), *range(601, 700), *range(701, 1_202), 2**62 - 1]
        assert _verify(capsys, db_path) == (1, [("chain", 5)])


class TestReadBounds:
    def test_a_read_is_bounded_by_the_head_when_it_began(self, db_path: Path) -> None:
        """Rows another connection commits while a read is under way are not read, and
        none is skipped: the read is every version up to the head it began at."""
        _journal(db_path, turns=299)
        with eventstore.open(db_path) as journal, eventstore.open(db_path) as other:
            rows = journal.recorder.read(SID)
            payloads = journal.recorder.read_payloads(SID)
            first, _ = next(rows), next(payloads)
            fill(other.session(SID), 400)
            versions = [first.version, *(r.version for r in rows)]
            assert versions == list(range(1, 301))
            assert len([_, *payloads]) == 300
            assert [r.version for r in journal.recorder.read(SID)] == list(range(1, 701))

    def test_verify_walks_every_stored_version(
        self, db_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A forged row far past the rest (above 2**62), or moved below version 1, is a
        finding: verify walks what ``events()`` folds, and sees what reads start after."""
        _journal(db_path)
        _tamper(db_path, lambda c: c.execute("UPDATE events SET version = ? WHERE version = 21",
                                             (2**62 + 1,)), rehash=True)  # fmt: skip
        assert _verify(capsys, db_path) == (1, [("chain", 21)])
        _tamper(db_path, lambda c: c.execute("UPDATE events SET version = 0 WHERE version = 20"),
                rehash=True)  # fmt: skip
        code, found = _verify(capsys, db_path)
        assert (code, ("integrity", None) in found) == (1, True)


def _script(db: Path, sql: str) -> None:
    """Run ``sql`` on the journal file with a plain connection (DDL, as a user might)."""
    conn = sqlite3.connect(db)
    try:
        conn.executescript(sql)
    finally:
        conn.close()


class TestTriggers:
    def test_a_trigger_of_someone_elses_on_events_is_a_finding(
        self, db_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A trigger that silently drops appends (RAISE(IGNORE)) is an integrity finding,
        though every stored row links; one on another table, or an auditor's index or
        view, is not."""
        _journal(db_path)
        _script(
            db_path,
            "CREATE TABLE notes (x); CREATE TRIGGER notes_log AFTER INSERT ON notes BEGIN"
            " SELECT 1; END; CREATE INDEX by_type ON events (type);"
            " CREATE VIEW my_turns AS SELECT * FROM turns;",
        )
        assert main(["verify", str(db_path)]) == 0
        capsys.readouterr()
        _script(
            db_path,
            "CREATE TRIGGER swallow BEFORE INSERT ON events WHEN NEW.version > 21"
            " BEGIN SELECT RAISE(IGNORE); END",
        )
        assert main(["verify", str(db_path)]) == 1
        assert "trigger swallow on events is not tierlog's" in capsys.readouterr().out

    def test_a_changed_audit_view_is_a_finding(
        self, db_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An audit view replaced to hide rows misleads ``audit``; verify says so."""
        _journal(db_path)
        _script(
            db_path,
            "DROP VIEW compaction_refusals; CREATE VIEW compaction_refusals AS"
            " SELECT * FROM events WHERE 0",
        )
        assert main(["verify", str(db_path)]) == 1
        assert "view compaction_refusals was changed" in capsys.readouterr().out

    @pytest.mark.parametrize(
        ("sql", "problem"),
        [
            ("DROP TRIGGER events_no_delete", "trigger events_no_delete is missing"),
            (
                "DROP TRIGGER events_no_update; CREATE TRIGGER events_no_update BEFORE UPDATE"
                " ON events WHEN 0 BEGIN SELECT RAISE(ABORT, 'x'); END",
                "trigger events_no_update was changed (it is not tierlog's)",
            ),
        ],
    )
    def test_a_missing_or_changed_trigger_is_a_finding(
        self, db_path: Path, capsys: pytest.CaptureFixture[str], sql: str, problem: str
    ) -> None:
        """A journal whose append-only triggers are gone or defanged is an integrity
        finding (as on PostgreSQL), though every row still links."""
        _journal(db_path)
        _script(db_path, sql)
        assert main(["verify", str(db_path)]) == 1
        out = capsys.readouterr().out
        assert f"{problem}: the log is not protected against UPDATE and DELETE" in out


def _unstrict(db: Path, *, strict: bool = False) -> None:
    """Take STRICT off the events table (``writable_schema``): a column then holds any
    type; ``strict`` puts it back (the stored text is tierlog's again, the rows stay)."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA writable_schema = ON")
        (sql,) = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'events'").fetchone()
        edited = sql.replace(") STRICT", ")") if not strict else sql.rstrip() + " STRICT"
        conn.execute("UPDATE sqlite_schema SET sql = ? WHERE name = 'events'", (edited,))
        conn.commit()
    finally:
        conn.close()


class TestMistypedValues:
    @pytest.mark.parametrize("value", ["'abc'", "X'00'", "20.5", "1e300"])
    def test_an_edited_schema_is_a_finding_and_a_clear_error(
        self, db_path: Path, capsys: pytest.CaptureFixture[str], value: str
    ) -> None:
        """A schema edited in place (STRICT off) lets a version hold any value: verify
        reports the edit (exit 1), every other command refuses the file (exit 2), never
        an internal error; the edit alone is enough."""
        _journal(db_path)
        _unstrict(db_path)
        assert _verify(capsys, db_path) == (1, [("integrity", None)])
        sql = f"UPDATE events SET version = {value} WHERE version = 21"
        _tamper(db_path, lambda c: c.execute(sql), rehash=False)
        assert _verify(capsys, db_path) == (1, [("integrity", None)])
        for command in (["state", str(db_path), SID], ["log", str(db_path), SID]):
            assert main(command) == 2
            assert "schema was edited" in capsys.readouterr().err
        assert main(["verify", "--clean", str(db_path)]) == 1  # nothing to clean, still found
        assert "schema was edited" in capsys.readouterr().out

    @pytest.mark.parametrize(
        ("value", "at"), [("'abc'", 21), ("X'00'", 21), ("20.5", 21), ("1e300", 21), ("'x9'", 9)]
    )
    def test_a_value_left_behind_a_restored_schema_is_found(
        self, db_path: Path, capsys: pytest.CaptureFixture[str], value: str, at: int
    ) -> None:
        """A forger who takes STRICT off, writes a version of another type and puts the
        schema text back passes the open check: verify still finds the row (SQLite's
        type check and a chain finding at the version it should be), and reading the
        session is an IntegrityError naming the stored head (exit 2)."""
        _journal(db_path)
        _unstrict(db_path)
        sql = f"UPDATE events SET version = {value} WHERE version = {at}"
        _tamper(db_path, lambda c: c.execute(sql), rehash=False)
        _unstrict(db_path, strict=True)
        code, found = _verify(capsys, db_path)
        assert (code, ("chain", at) in found, ("integrity", None) in found) == (1, True, True)
        for command in (["state", str(db_path), SID], ["log", str(db_path), SID]):
            assert main(command) == 2
            assert "not a version from 1 on" in capsys.readouterr().err

    @pytest.mark.parametrize(
        ("field", "value", "problem"),
        [
            ("version", "x9", "version is 'x9', not an integer"),
            ("version", 9.0, "version is 9.0, not an integer"),
            ("hash", 7, "hash is 7, not text"),
            ("payload", b"{}", "payload is b'{}', not text"),
            ("session_id", None, "session_id is None, not text"),
        ],
    )
    def test_the_walk_words_a_value_of_another_type(
        self, db_path: Path, field: str, value: object, problem: str
    ) -> None:
        """Rows handed to the chain walk (or to ``append_recorded``) with a value of
        another type than its column's are a problem at the version they should be,
        even a version of 9.0 whose hash was forged with it."""
        _journal(db_path)
        with eventstore.open(db_path, readonly=True) as journal:
            rows = list(journal.recorder.read(SID))
        bad = rows[8]._replace(**{field: value})  # type: ignore[arg-type]
        if field == "version":  # forged: the hash covers the row as it now stands
            body = f'{bad.prev_hash}{{"payload":{bad.payload},"recorded_at":"{bad.recorded_at}"'
            body += f',"schema_version":1,"session_id":"{SID}","type":"{bad.type}","version":9.0}}'
            bad = bad._replace(hash=hashlib.sha256(body.encode()).hexdigest())
        walk = ChainWalk(SID, [*rows[:8], bad, *rows[9:]])
        assert len(list(walk)) == 8
        assert walk.problem is not None
        assert (walk.problem.version, problem in walk.problem.problem) == (9, True)


class TestSchemaVersions:
    @pytest.mark.parametrize("schema", [0, 2, -1])
    def test_a_schema_this_tierlog_does_not_read_is_a_finding(
        self, db_path: Path, capsys: pytest.CaptureFixture[str], schema: int
    ) -> None:
        """An event row claiming a schema version this tierlog does not read is a chain
        finding at its version, even with the chain forged again over it."""
        _journal(db_path)

        def edit(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE events SET schema_version = ? WHERE session_id = ? AND version = 6",
                (schema, SID),
            )

        _tamper(db_path, edit, rehash=True)
        assert _verify(capsys, db_path) == (1, [("chain", 6)])


# An escaped lone surrogate, nesting deeper than any decoder recurses, an integer past
# Python's digit limit: valid-looking JSON text that the standard decoder cannot return.
_ODD = {
    "lone surrogate": '{"content":"\\ud800","index":2,"role":"user","tokens":10}',
    "deep nesting": (
        '{"content":' + "[" * 5000 + "]" * 5000 + ',"index":2,"role":"user","tokens":10}'
    ),
    "5000 digits": '{"content":"x","index":' + "9" * 5000 + ',"role":"user","tokens":10}',
}


class TestOddPayloads:
    @pytest.mark.parametrize("payload", _ODD.values(), ids=_ODD.keys())
    @pytest.mark.parametrize("rehash", [True, False], ids=["re-hashed", "as-is"])
    def test_verify_names_the_row(
        self, db_path: Path, capsys: pytest.CaptureFixture[str], payload: str, rehash: bool
    ) -> None:
        """A payload the decoders cannot read is a chain finding at its version (exit 1),
        not an internal error."""
        _journal(db_path)
        _tamper(db_path, _payload(4, payload), rehash=rehash)
        assert _verify(capsys, db_path) == (1, [("chain", 4)])

    @pytest.mark.parametrize("payload", _ODD.values(), ids=_ODD.keys())
    def test_reading_the_session_is_an_integrity_error(self, db_path: Path, payload: str) -> None:
        """Replaying such a row raises IntegrityError (the CLI's exit 2), not a bare
        RecursionError or ValueError."""
        _journal(db_path)
        _tamper(db_path, _payload(4, payload), rehash=True)
        with (
            eventstore.open(db_path, snapshot_every=0) as journal,
            pytest.raises(eventstore.IntegrityError, match="malformed stored event"),
        ):
            list(journal.session(SID).events())

    @pytest.mark.parametrize("payload", _ODD.values(), ids=_ODD.keys())
    def test_ship_refuses_the_row(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: str
    ) -> None:
        """Shipping a session with such a row stops at it with a one-line error."""
        src = tmp_path / "src.db"
        _journal(src)
        _tamper(src, _payload(4, payload), rehash=True)
        code = main(["ship", str(src), str(tmp_path / "dest.db")])
        _, err = capsys.readouterr()
        assert code in (1, 2)
        assert "internal error" not in err

    @pytest.mark.parametrize(
        "payload", [*_ODD.values(), '{"content":'], ids=[*_ODD.keys(), "not JSON"]
    )
    def test_export_refuses_the_row(
        self, db_path: Path, capsys: pytest.CaptureFixture[str], payload: str
    ) -> None:
        """Exporting a session whose stored row was edited into unreadable JSON is refused
        as a finding (exit 1, one line naming it), not an internal error; no file is left."""
        _journal(db_path)
        _tamper(db_path, _payload(4, payload), rehash=True)
        code = main(["export", str(db_path), SID, "-o", str(db_path.with_suffix(".jsonl"))])
        _, err = capsys.readouterr()
        assert (code, "internal error" in err, "does not verify" in err) == (1, False, True)
        assert not db_path.with_suffix(".jsonl").exists()


def _split_chunk(db: Path, ledger: str, at: int) -> None:
    """Cut the first chunk of ``ledger`` in two at byte ``at`` (same bytes, in order)."""
    conn = sqlite3.connect(db)
    try:
        ((data,),) = conn.execute(
            "SELECT data FROM snapshot_chunks WHERE ledger = ? AND chunk = 0", (ledger,)
        ).fetchall()
        assert len(data) < CHUNK * 8  # one chunk: chunk 1 is free
        conn.execute(
            "UPDATE snapshot_chunks SET data = ? WHERE ledger = ? AND chunk = 0",
            (data[:at], ledger),
        )
        conn.execute("INSERT INTO snapshot_chunks VALUES (?, ?, 1, ?)", (SID, ledger, data[at:]))
        conn.commit()
    finally:
        conn.close()


class TestSnapshotChunks:
    @pytest.mark.parametrize("at", [7, 8, 13])
    @pytest.mark.parametrize("ledger", ["tok_starts", "turn_versions"])
    def test_integer_chunks_cut_elsewhere_read_as_before(
        self, db_path: Path, capsys: pytest.CaptureFixture[str], ledger: str, at: int
    ) -> None:
        """An integer ledger stored in chunks cut at another byte (even inside an item)
        still decodes to the same, hash-checked state: trusted, as when the chunks were
        joined before decoding."""
        with eventstore.open(db_path, snapshot_every=30) as journal:
            fill(new_session(journal, SID), 40)
        _split_chunk(db_path, ledger, at)
        with eventstore.open(db_path, snapshot_every=30) as journal:
            checked = journal.snapshots.check(SID)
            assert checked is not None
            assert (checked.problem, checked.state is not None) == (None, True)
        assert _verify(capsys, db_path) == (0, [])

    def test_integer_chunks_that_lose_bytes_are_not_trusted(self, db_path: Path) -> None:
        """Bytes missing from an integer ledger leave the snapshot untrusted."""
        with eventstore.open(db_path, snapshot_every=30) as journal:
            fill(new_session(journal, SID), 40)
        _tamper(db_path, lambda c: c.execute(
            "UPDATE snapshot_chunks SET data = substr(data, 1, length(data) - 3)"
            " WHERE ledger = 'tok_starts'"), rehash=False)  # fmt: skip
        with eventstore.open(db_path, snapshot_every=30) as journal:
            checked = journal.snapshots.check(SID)
            assert checked is not None
            assert checked.state is None
            assert journal.session(SID).state.turns == 40  # replayed instead


_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)


class TestWriterSkipsChecks:
    @settings(max_examples=8)
    @given(texts=st.lists(_TEXT, min_size=1, max_size=4), tokens=st.integers(0, 2**62))
    def test_every_path_writes_json_valid_rows_from_version_1(
        self, tmp_path_factory: pytest.TempPathFactory, texts: list[str], tokens: int
    ) -> None:
        """Rows written by append, extend, import and ship pass the CHECKs the writing
        connection skips (json_valid(payload), version >= 1), read by another connection."""
        tmp = tmp_path_factory.mktemp("checks")
        src, dest, imported = tmp / "src.db", tmp / "dest.db", tmp / "imported.db"
        with eventstore.open(src) as journal:
            s = new_session(journal, SID)
            for i, text in enumerate(texts):
                s.append_turn("user", text, tokens if i == 0 else 0)
                s.open_call(f"{text}{i}", "tool_call", text or "n")
            n = s.state.turns
            s.extend(
                [
                    ConstraintStated(key=texts[0] + "k", text=texts[-1]),
                    CallOpened(call_id=texts[-1] + "x", kind="tool_call", name=texts[0] + "n"),
                    TurnAppended(index=n, role="user", content="".join(texts), tokens=1),
                ]
            )
        assert main(["ship", str(src), str(dest)]) == 0
        jsonl = tmp / "s.jsonl"
        assert main(["export", str(src), SID, "-o", str(jsonl)]) == 0
        assert main(["import", str(imported), str(jsonl)]) == 0
        for db in (src, dest, imported):
            conn = sqlite3.connect(db)
            try:
                bad = conn.execute(
                    "SELECT count(*) FROM events WHERE NOT json_valid(payload) OR version < 1"
                ).fetchone()
                total = conn.execute("SELECT count(*) FROM events").fetchone()
            finally:
                conn.close()
            assert (bad, total) == ((0,), (3 + 2 * len(texts) + 1,))


class TestSharedStates:
    def test_old_states_answer_while_a_writer_extends(self, db_path: Path) -> None:
        """States of a snapshot-loaded session (lazily indexed call ids) hash and answer
        ``in`` the same from four reader threads while the writer thread extends."""
        with eventstore.open(db_path, snapshot_every=100) as journal:
            s = new_session(journal, SID)
            s.extend([CallOpened(call_id=f"c{i}", kind="tool_call", name="n") for i in range(150)])
            fill(s, 60)
        states: list[eventstore.SessionState] = []
        ready, done = threading.Event(), threading.Event()
        problems: list[str] = []

        def write() -> None:
            try:
                with eventstore.open(db_path, snapshot_every=100, synchronous="normal") as journal:
                    s = journal.session(SID)
                    states.append(s.state)
                    ready.set()
                    for k in range(200):
                        n = s.state.turns
                        s.extend(
                            [
                                CallOpened(call_id=f"w{k}", kind="tool_call", name="n"),
                                TurnAppended(index=n, role="user", content="x", tokens=1),
                            ]
                        )
                        states.append(s.state)
            except Exception as exc:  # reported below, with the readers' problems
                problems.append(repr(exc))
            finally:
                ready.set()
                done.set()

        def read(seed: int) -> None:
            ready.wait()
            seen: dict[int, str] = {}
            k = seed
            while not done.is_set() or k < seed + 50:
                k += 1
                time.sleep(0.0005)  # leave the writer some turns
                state = states[(k * 7919) % len(states)]
                digest = state.sha256
                if seen.setdefault(state.version, digest) != digest:
                    problems.append(f"v{state.version} hashed differently")
                ids = list(state.call_ids)
                for call_id in ("c0", "c149", f"w{k % 200}", "nope"):
                    if (call_id in state.call_ids) != (call_id in ids):
                        problems.append(f"{call_id!r} in v{state.version}")

        threads = [threading.Thread(target=write)]
        threads += [threading.Thread(target=read, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "a thread hangs"
        assert problems == []
        with eventstore.open(db_path, snapshot_every=0) as journal:
            s = journal.session(SID)
            for state in states[::10]:
                assert s.state_at(state.version).sha256 == state.sha256
