"""The SQLite recorder: schema, immutability, tampering, bad input (the port's contract is
in test_recorder.py)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

import eventstore
import reducers as r
from eventstore._ops._audit import verify
from eventstore._sqlite._recorder import SqliteRecorder
from eventstore._sqlite._schema import FORMER_VIEWS, former_note, view_sql
from eventstore._store._chain import check_chain
from tests.helpers import fill, new_session, rows

ROOT = Path(__file__).resolve().parents[2]
TURN = r.TurnAppended(index=0, role="user", content="hello", tokens=3)


@pytest.fixture(name="store")
def _store(tmp_path: Path) -> SqliteRecorder:
    return SqliteRecorder(tmp_path / "store.db")


class TestSchema:
    def test_wal_file_appears(self, db_path: Path, journal: eventstore.Journal) -> None:
        """The journal runs in WAL mode: a -wal file sits beside it after a write."""
        new_session(journal)
        assert Path(f"{db_path}-wal").exists()
        assert rows(db_path, "PRAGMA journal_mode") == [("wal",)]

    def test_audit_views_exist(self, db_path: Path, journal: eventstore.Journal) -> None:
        """Every SPEC audit view is created with the schema."""
        names = {n for (n,) in rows(db_path, "SELECT name FROM sqlite_schema WHERE type='view'")}
        assert names == {
            "turns",
            "truncations",
            "spills",
            "compactions",
            "compaction_refusals",
            "markers",
            "marker_refusals",
            "marker_invalidations",
            "resumes",
            "obligations",
            "withdrawals",
            "ingest_notes",
            "retells",
        }

    def test_a_dropped_view_is_a_finding(self, db_path: Path) -> None:
        """A view every journal has (obligations), dropped, is an integrity finding of
        verify; a view added since (withdrawals) is not, as older journals lack it."""
        eventstore.open(db_path).close()
        conn = sqlite3.connect(db_path)
        conn.executescript("DROP VIEW obligations; DROP VIEW withdrawals;")
        conn.close()
        with eventstore.open(db_path, readonly=True) as journal:
            found = [f.problem for f in verify(journal)]
        assert found == [
            "view obligations is missing (dropped?): audits that read it fail until a writer"
            " opens the journal and creates it again"
        ]

    def test_a_view_an_earlier_release_made_is_remade_by_a_writer(self, tmp_path: Path) -> None:
        """The 0.2 journal's obligations view (every disposition outstanding) is no
        finding of verify (its findings are the decisions this release makes
        otherwise), and a writer's open makes it this release's: an approach disposed of
        again is outstanding once, by its latest disposition."""
        db = tmp_path / "old.db"
        db.write_bytes((ROOT / "tests" / "data" / "journal-0.2" / "journal-0.2.db").read_bytes())
        view = "SELECT sql FROM sqlite_schema WHERE name = 'obligations'"
        outstanding = (
            "SELECT detail FROM obligations WHERE outstanding AND session_id = 'honest'"
            " AND kind = 'negative_fact'"
        )
        (former,) = FORMER_VIEWS["obligations"]
        assert rows(db, view)[0][0].split() == f'CREATE VIEW "obligations" AS {former}'.split()
        assert rows(db, outstanding) == [("rejected",)]
        with eventstore.open(db, readonly=True) as journal:
            found = verify(journal)  # decisions 0.2 made otherwise, and a note of the view
        before = [f.problem for f in found if f.check != "view"]
        assert before
        assert [(f.problem, f.fatal) for f in found if f.check == "view"] == [
            (former_note("obligations"), False)
        ]
        assert not [p for p in before if "view" in p]
        with eventstore.open(db) as journal:
            journal.session("honest").dispose("backfill-first", "superseded", "done another way")
        assert rows(db, view)[0][0].split() == view_sql("obligations").split()
        assert rows(db, outstanding) == [("superseded",)]
        with eventstore.open(db, readonly=True) as journal:
            assert [f.problem for f in verify(journal)] == before
        with sqlite3.connect(db) as conn:  # the old view, as 0.2 made it, counted both
            conn.execute("DROP VIEW obligations")
            conn.execute(f'CREATE VIEW "obligations" AS {former}')
        assert rows(db, outstanding) == [("rejected",), ("superseded",)]

    def test_views_added_later_appear_in_older_journals(self, db_path: Path) -> None:
        """A journal made before the withdrawals view gets it when it is next opened."""
        eventstore.open(db_path).close()
        conn = sqlite3.connect(db_path)
        conn.execute("DROP VIEW withdrawals")
        conn.close()
        with eventstore.open(db_path) as journal:
            s = new_session(journal)
            fill(s, 2)
            s.retract_turn(1, "pop_item")
        assert rows(db_path, "SELECT kind, from_turn, to_turn, reason FROM withdrawals") == [
            ("retracted", 1, 2, "pop_item")
        ]

    def test_foreign_file_is_refused_untouched(self, tmp_path: Path) -> None:
        """A file that is not SQLite gets a JournalError and keeps its bytes."""
        path = tmp_path / "notes.txt"
        path.write_bytes(b"just some notes, not a database" * 10)
        with pytest.raises(eventstore.JournalError, match="not a tierlog journal"):
            eventstore.open(path)
        assert path.read_bytes() == b"just some notes, not a database" * 10

    def test_other_sqlite_database_is_refused(self, tmp_path: Path) -> None:
        """A SQLite database of something else is not adopted."""
        path = tmp_path / "other.db"
        sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.commit()
        with pytest.raises(eventstore.JournalError, match="not a tierlog journal"):
            eventstore.open(path)
        assert rows(path, "SELECT name FROM sqlite_schema") == [("t",)]

    def test_a_dump_restore_is_told_how_to_mark_it(self, db_path: Path, tmp_path: Path) -> None:
        """A journal restored from ``.dump`` (its tables, without the file's marks) is
        refused untouched, with the two pragmas that make it a journal again; set,
        it opens and verifies."""
        with eventstore.open(db_path) as journal:
            fill(new_session(journal), 3)
        source = sqlite3.connect(db_path)
        restored = sqlite3.connect(tmp_path / "restored.db")
        restored.executescript("\n".join(source.iterdump()))
        source.close()
        with pytest.raises(eventstore.JournalError, match="application_id = 1953064306") as err:
            eventstore.open(tmp_path / "restored.db")
        assert "user_version = 1" in str(err.value)
        restored.executescript("PRAGMA application_id = 1953064306; PRAGMA user_version = 1;")
        restored.close()
        with eventstore.open(tmp_path / "restored.db", readonly=True) as journal:
            assert verify(journal) == []

    def test_newer_schema_is_refused(self, db_path: Path) -> None:
        """A journal written by a newer tierlog asks for an upgrade instead of guessing."""
        eventstore.open(db_path).close()
        conn = sqlite3.connect(db_path)
        conn.execute("PRAGMA user_version = 99")
        conn.close()
        with pytest.raises(eventstore.JournalError, match="schema version 99"):
            eventstore.open(db_path)

    def test_folder_is_refused(self, tmp_path: Path) -> None:
        """A folder path is a clear error, not a sqlite traceback."""
        with pytest.raises(eventstore.JournalError, match="folder"):
            eventstore.open(tmp_path)

    def test_bad_synchronous_is_invalid(self, db_path: Path) -> None:
        """Only 'full' and 'normal' are accepted."""
        with pytest.raises(eventstore.InvalidArgument):
            eventstore.open(db_path, synchronous="off")


class TestImmutability:
    @pytest.mark.parametrize(
        "sql",
        ["UPDATE events SET payload = '{}' WHERE version = 1", "DELETE FROM events"],
    )
    def test_update_and_delete_fail_from_another_connection(
        self, db_path: Path, journal: eventstore.Journal, sql: str
    ) -> None:
        """The triggers refuse UPDATE and DELETE for any connection, not just ours."""
        fill(new_session(journal), 2)
        before = rows(db_path)
        conn = sqlite3.connect(db_path)
        with pytest.raises(sqlite3.DatabaseError, match="immutable"):
            conn.execute(sql)
        conn.close()
        assert rows(db_path) == before

    def test_invalid_json_payload_is_rejected_by_sqlite(
        self, db_path: Path, journal: eventstore.Journal
    ) -> None:
        """CHECK(json_valid(payload)) holds even for hand-written rows."""
        conn = sqlite3.connect(db_path)
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO events (session_id, version, type, schema_version, payload,"
                " recorded_at, prev_hash, hash) VALUES ('x', 1, 'T', 1, 'not json', '', '', '')"
            )

    def test_verify_on_a_writing_journal_checks_the_checks(
        self, db_path: Path, journal: eventstore.Journal
    ) -> None:
        """tierlog's writing connection skips CHECK(json_valid) for the rows it encodes
        itself; a row that bypassed the CHECK elsewhere is still an integrity finding of
        verify on that connection, which goes on writing afterwards."""
        s = new_session(journal)
        conn = sqlite3.connect(db_path)
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute(
            "INSERT INTO events (session_id, version, type, schema_version, payload,"
            " recorded_at, prev_hash, hash) VALUES ('x', 1, 'T', 1, 'not json', '', '', '')"
        )
        conn.commit()
        conn.close()
        found = [f for f in verify(journal, ["s"]) if f.check == "integrity"]
        assert any("CHECK constraint failed" in f.problem for f in found)
        s.append_turn("user", "still writing", 1)
        with pytest.raises(sqlite3.IntegrityError):  # the pragma is this connection's only
            sqlite3.connect(db_path).execute(
                "INSERT INTO events (session_id, version, type, schema_version, payload,"
                " recorded_at, prev_hash, hash) VALUES ('y', 1, 'T', 1, 'nope', '', '', '')"
            )

    def test_duplicate_version_is_rejected_by_sqlite(
        self, db_path: Path, journal: eventstore.Journal
    ) -> None:
        """UNIQUE(session_id, version): two rows can never claim one version."""
        new_session(journal, "dup")
        conn = sqlite3.connect(db_path)
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO events (session_id, version, type, schema_version, payload,"
                " recorded_at, prev_hash, hash) VALUES ('dup', 1, 'T', 1, '{}', '', '', '')"
            )


class TestIntegrity:
    @pytest.mark.parametrize(
        ("sql", "problem"),
        [
            ("UPDATE events SET payload = json_set(payload, '$.tokens', 999)", "hash"),
            ("UPDATE events SET recorded_at = '2020-01-01'", "hash"),
            ("UPDATE events SET payload = '{ \"at\": 1 }'", "canonical"),
            ("DELETE FROM events", "version sequence"),
        ],
    )
    def test_edited_row_is_reported_at_its_version(
        self, store: SqliteRecorder, tmp_path: Path, sql: str, problem: str
    ) -> None:
        """A row changed behind the store's back (triggers dropped) is named by version."""
        store.append(
            "s",
            [TURN.__class__(index=i, role="u", content="x", tokens=1) for i in range(5)],
            expected_version=0,
        )
        conn = sqlite3.connect(tmp_path / "store.db")
        conn.executescript("DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;")
        conn.execute(f"{sql} WHERE version = 3")
        conn.commit()
        found = check_chain(store, "s")
        assert found is not None
        assert found.version == 3
        assert problem in found.problem


class TestBadInput:
    def test_negative_tokens_write_nothing(
        self, db_path: Path, journal: eventstore.Journal
    ) -> None:
        """Negative tokens are InvalidEvent and the log is unchanged."""
        s = new_session(journal)
        before = rows(db_path)
        with pytest.raises(eventstore.InvalidEvent, match="tokens"):
            s.append_turn("user", "x", -1)
        assert rows(db_path) == before

    @pytest.mark.parametrize(
        ("type_name", "payload", "message"),
        [
            (
                "TurnAppended",
                {"index": 0, "role": "u", "content": "", "tokens": 1, "x": 1},
                "unknown field",
            ),
            (
                "TurnAppended",
                {"index": 0, "role": "u", "content": "", "tokens": "1"},
                "tokens: must be",
            ),
            (
                "TurnAppended",
                {"index": 0, "role": "u", "content": "", "tokens": True},
                "tokens: must be",
            ),
            ("TurnAppended", {"index": 0, "role": "u"}, "required field missing"),
            (
                "MarkerRefused",
                {"marker_id": "m", "node_id": "n", "violations": [{"rule": 1}]},
                "expected str",
            ),
            ("Compacted", {"node_id": "n", "tier": "1"}, "expected int"),
        ],
    )
    def test_malformed_payload_is_invalid_event(
        self, type_name: str, payload: object, message: str
    ) -> None:
        """Unknown fields, wrong types and missing fields name the field in the error."""
        from eventstore._store._codec import from_payload

        with pytest.raises(eventstore.InvalidEvent, match=message):
            from_payload(type_name, json.dumps(payload))

    def test_unknown_event_type_is_invalid_event(self) -> None:
        """An unknown tag is our error, not a bare KeyError."""
        from eventstore._store._codec import from_payload

        with pytest.raises(eventstore.InvalidEvent, match="unknown event type"):
            from_payload("TurnDeleted", "{}")

    def test_wrong_python_types_are_invalid(self, journal: eventstore.Journal) -> None:
        """The Python API checks types at run time too."""
        s = new_session(journal)
        with pytest.raises(eventstore.InvalidEvent):
            s.append_turn("user", "x", "12")  # type: ignore[arg-type]
        with pytest.raises(eventstore.InvalidEvent):
            s.open_call("c", "telepathy", "x")
        assert s.state.version == 1


class TestFailedWrites:
    def test_full_database_is_a_journal_error(self, store: SqliteRecorder) -> None:
        """With max_page_count reached, append raises JournalError naming the cause (not
        sqlite3's 'cannot rollback'), and nothing is committed."""
        store.append("s", [TURN], expected_version=0)
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages}")
        big = r.TurnAppended(index=1, role="u", content="z" * 50_000, tokens=1)
        with pytest.raises(eventstore.JournalError, match="full"):
            store.append("s", [big], expected_version=1)
        assert store.head("s")[0] == 1
        assert not store.conn.in_transaction

    def test_no_autocommit_after_sqlite_rolled_back(self, store: SqliteRecorder) -> None:
        """Once SQLite has rolled the transaction back by itself, later writes in the same
        block are refused instead of committing on their own."""
        store.append("s", [TURN], expected_version=0)
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages}")
        big = r.TurnAppended(index=1, role="u", content="z" * 50_000, tokens=1)

        def carry_on_regardless() -> None:
            with store.transaction():
                with contextlib.suppress(eventstore.JournalError):
                    store.append("s", [big], expected_version=1)
                store.conn.execute(f"PRAGMA max_page_count = {pages * 10}")
                store.append("s", [TURN], expected_version=1)

        with pytest.raises(eventstore.JournalError, match="rolled back"):
            carry_on_regardless()
        assert store.head("s")[0] == 1
