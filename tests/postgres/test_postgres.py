"""The PostgreSQL recorder beyond the port's contract: opening, the schema's own
guards, per-session locking, read-only queries (the contract is in test_recorder.py)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import eventstore
import reducers as r
from eventstore._location import redact
from eventstore._ops._audit import audit, verify
from eventstore._postgres._recorder import PostgresRecorder
from eventstore._postgres._schema import VIEWS_VERSION
from eventstore.cli import main
from eventstore.cli._incidents import dropped_rejection, evicted_constraint
from tests.helpers import fill, new_session
from tests.targets import PostgresTarget

TURN = r.TurnAppended(index=0, role="user", content="hello", tokens=3)


@pytest.fixture(name="pg")
def _pg(pg_url: str) -> PostgresTarget:
    return PostgresTarget(pg_url)


def _connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _until_waiting_for_a_lock(pg: PostgresTarget, recorder: PostgresRecorder) -> None:
    """Return once ``recorder``'s connection waits on a lock (pg_stat_activity); fail
    after 30 s."""
    pid = recorder.conn.info.backend_pid
    deadline = time.monotonic() + 30
    sql = "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s"
    while pg.rows_with(sql, (pid,)) != [("Lock",)]:
        assert time.monotonic() < deadline, "the second writer never waited for the lock"
        time.sleep(0.01)


class TestOpen:
    def test_both_schemes_open_the_same_journal(self, pg: PostgresTarget) -> None:
        """postgresql:// and postgres:// name the same journal."""
        with eventstore.open(pg.location) as journal:
            new_session(journal, "a")
        short = pg.location.replace("postgresql://", "postgres://", 1)
        with eventstore.open(short, readonly=True) as journal:
            assert journal.sessions() == ["a"]

    def test_without_psycopg_the_error_says_what_to_install(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A URL without the extra installed is a JournalError naming the extra."""
        monkeypatch.setitem(sys.modules, "psycopg", None)
        with pytest.raises(eventstore.JournalError, match=r"pip install 'tierlog\[postgres\]'"):
            eventstore.open("postgresql://nobody@/nothing")

    def test_a_foreign_schema_is_refused_untouched(self, pg: PostgresTarget) -> None:
        """A schema holding other tables is not adopted, and nothing is created in it."""
        pg.tamper("CREATE TABLE orders (id int)")
        with pytest.raises(eventstore.JournalError, match="not a tierlog journal"):
            eventstore.open(pg.location)
        tables = pg.rows("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        assert tables == [("orders",)]

    def test_a_newer_schema_is_refused(self, pg: PostgresTarget) -> None:
        """A journal written by a newer tierlog asks for an upgrade."""
        eventstore.open(pg.location).close()
        pg.tamper("UPDATE tierlog_meta SET value = '99' WHERE key = 'schema_version'")
        with pytest.raises(eventstore.JournalError, match="schema version 99"):
            eventstore.open(pg.location)

    def test_a_schema_version_that_is_not_a_number_is_not_a_journal(
        self, pg: PostgresTarget
    ) -> None:
        """A garbled schema_version in tierlog_meta is a clear JournalError."""
        eventstore.open(pg.location).close()
        pg.tamper("UPDATE tierlog_meta SET value = '2a' WHERE key = 'schema_version'")
        with pytest.raises(eventstore.JournalError, match=r"not a tierlog journal.*'2a'"):
            eventstore.open(pg.location, readonly=True)

    def test_readonly_on_an_empty_schema_creates_nothing(self, pg: PostgresTarget) -> None:
        """readonly=True never installs the schema."""
        with pytest.raises(eventstore.JournalError, match="not a tierlog journal"):
            eventstore.open(pg.location, readonly=True)
        assert pg.rows("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == [
            (0,)
        ]

    def test_an_unreachable_server_is_a_journal_error(self, tmp_path: Any) -> None:
        """No server at the socket: a one-line JournalError, not a psycopg traceback."""
        with pytest.raises(eventstore.JournalError, match="cannot connect"):
            eventstore.open(f"postgresql://u:secret@/db?host={tmp_path}&connect_timeout=2")

    def test_the_password_never_shows(self) -> None:
        """Messages name the URL without its password."""
        assert redact("postgresql://ann:s3cret@db.internal:5432/fleet") == (
            "postgresql://ann:***@db.internal:5432/fleet"
        )

    @pytest.mark.parametrize(
        ("url", "shown"),
        [
            ("postgresql://ann:s3cret@[::1/db", "postgresql://ann:***@[::1/db"),
            (
                "postgres://ann@/db?host=/run&password=s3cret&sslpassword=s3cret#x",
                "postgres://ann@/db?host=/run&password=***&sslpassword=***#x",
            ),
            ("postgresql://ann:s3%40cret@h:99999999/db", "postgresql://ann:***@h:99999999/db"),
        ],
    )
    def test_redaction_hides_every_password_and_never_raises(self, url: str, shown: str) -> None:
        """A password in the userinfo or the query string is hidden, even in a URL
        urllib cannot parse."""
        assert redact(url) == shown

    def test_a_malformed_url_is_a_usage_error_without_the_password(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """libpq quotes a URL it cannot parse: the CLI exits 2 with one line, no
        traceback, no password."""
        assert main(["verify", "postgresql://alice:S3CRETpw@[::1/db"]) == 2
        out, err = capsys.readouterr()
        assert "cannot connect" in err
        assert "S3CRETpw" not in out + err
        assert "Traceback" not in err

    def test_a_password_parameter_never_shows(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A password given as ?password= is hidden in the error message."""
        url = f"postgresql://u@/db?host={tmp_path}&password=S3CRETpw&connect_timeout=2"
        assert main(["verify", url]) == 2
        out, err = capsys.readouterr()
        assert "password=***" in err
        assert "S3CRETpw" not in out + err


class TestImmutability:
    @pytest.mark.parametrize(
        "sql",
        [
            "UPDATE events SET payload = '{}' WHERE version = 1",
            "DELETE FROM events",
            "TRUNCATE events",
            "DELETE FROM spill_data",
            "TRUNCATE spill_data",
        ],
    )
    def test_other_connections_cannot_rewrite_history(self, pg: PostgresTarget, sql: str) -> None:
        """The triggers refuse UPDATE, DELETE and TRUNCATE of events and spills for any
        connection."""
        import psycopg

        with eventstore.open(pg.location) as journal:
            s = new_session(journal)
            fill(s, 2)
            s.spill(0, 2)
        before = pg.rows()
        with _connect(pg.location) as conn, pytest.raises(psycopg.Error, match="immutable"):
            conn.execute(sql)
        assert pg.rows() == before

    @pytest.mark.parametrize(
        ("payload", "version"), [("not json", 1), ("{}", 1)], ids=["bad json", "duplicate"]
    )
    def test_the_schema_refuses_bad_rows(
        self, pg: PostgresTarget, payload: str, version: int
    ) -> None:
        """A payload that is not JSON, and a second row at one version, never go in."""
        import psycopg

        with eventstore.open(pg.location) as journal:
            new_session(journal, "dup")
        with _connect(pg.location) as conn, pytest.raises(psycopg.Error):
            conn.execute(
                "INSERT INTO events (session_id, version, type, schema_version, payload,"
                " recorded_at, prev_hash, hash) VALUES ('dup', %s, 'T', 1, %s, '', '', '')",
                (version, payload),
            )

    @pytest.mark.parametrize(
        "sql",
        [
            "ALTER TABLE events ALTER COLUMN schema_version TYPE bigint",
            "ALTER TABLE events ALTER COLUMN hash DROP NOT NULL",
            "ALTER TABLE events ADD COLUMN note text",
        ],
    )
    def test_changed_columns_are_refused_and_a_finding(
        self, pg: PostgresTarget, sql: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An events table whose columns were altered is refused when opened (exit 2 for
        state) and is an integrity finding for verify (exit 1)."""
        with eventstore.open(pg.location) as journal:
            new_session(journal)
        pg.tamper(sql)
        with pytest.raises(eventstore.IntegrityError, match="columns were changed"):
            eventstore.open(pg.location, readonly=True)
        assert main(["state", pg.location, "s"]) == 2
        assert main(["verify", pg.location]) == 1
        assert "columns were changed" in capsys.readouterr().out

    @pytest.mark.parametrize(
        ("sql", "problem"),
        [
            (
                "CREATE FUNCTION swallow() RETURNS trigger LANGUAGE plpgsql AS"
                " $$BEGIN RETURN NULL; END$$; CREATE TRIGGER swallow BEFORE INSERT ON events"
                " FOR EACH ROW EXECUTE FUNCTION swallow()",
                "trigger swallow on events is not tierlog's",
            ),
            (
                "CREATE RULE quiet AS ON INSERT TO events DO INSTEAD NOTHING",
                "rule quiet on events is not tierlog's",
            ),
            (  # a version-0 row could then hide below every read
                "ALTER TABLE events DROP CONSTRAINT events_version_check",
                "CHECK constraints on events (version >= 1, payload is JSON) were changed",
            ),
            (
                "ALTER TABLE events DROP CONSTRAINT events_session_id_version_key;"
                " ALTER TABLE events ADD UNIQUE (seq, hash)",
                "UNIQUE (session_id, version) constraint on events is missing",
            ),
        ],
    )
    def test_what_could_change_or_drop_appends_is_an_integrity_problem(
        self, pg: PostgresTarget, sql: str, problem: str
    ) -> None:
        """Someone else's trigger or rule on events, a CHECK taken off, or the UNIQUE
        swapped for a decoy, is reported although every stored row still links."""
        with eventstore.open(pg.location) as journal:
            new_session(journal)
        with _connect(pg.location) as conn:
            conn.execute(sql.encode())
        with eventstore.open(pg.location, readonly=True) as journal:
            found = [f.problem for f in verify(journal)]
        assert any(problem in p for p in found), found

    def test_a_session_id_collation_changed_is_refused(self, pg: PostgresTarget) -> None:
        """session_id compared case-blind would make two sessions one: refused at open."""
        with eventstore.open(pg.location) as journal:
            new_session(journal)
        with _connect(pg.location) as conn:
            views = [v for (v,) in conn.execute("SELECT viewname FROM pg_views"
                     " WHERE schemaname = current_schema()").fetchall()]  # fmt: skip
            conn.execute(("DROP VIEW " + ", ".join(views)).encode())
            conn.execute(b'ALTER TABLE events ALTER COLUMN session_id TYPE text COLLATE "POSIX"')
        with pytest.raises(eventstore.IntegrityError, match="columns were changed"):
            eventstore.open(pg.location)

    def test_a_disabled_trigger_is_an_integrity_problem(self, pg: PostgresTarget) -> None:
        """verify reports a disabled immutability trigger (the log is unprotected)."""
        from eventstore._ops._audit import verify

        with eventstore.open(pg.location) as journal:
            new_session(journal)
        pg.tamper("ALTER TABLE events DISABLE TRIGGER events_no_delete")
        with eventstore.open(pg.location, readonly=True) as journal:
            (finding,) = verify(journal)
        assert (finding.check, "events_no_delete is disabled" in finding.problem) == (
            "integrity",
            True,
        )

    @pytest.mark.parametrize(
        ("sql", "problem"),
        [
            (
                "DROP TRIGGER events_no_delete ON events; CREATE TRIGGER events_no_delete"
                " AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION tierlog_immutable()",
                "trigger events_no_delete was changed",
            ),
            (
                "DROP TRIGGER events_no_update ON events; CREATE TRIGGER events_no_update"
                " BEFORE UPDATE ON events FOR EACH ROW WHEN (false)"
                " EXECUTE FUNCTION tierlog_immutable()",
                "trigger events_no_update was changed",
            ),
            (
                "ALTER TABLE spill_data ENABLE REPLICA TRIGGER spill_data_no_update",
                "trigger spill_data_no_update is disabled",
            ),
            (
                "CREATE OR REPLACE FUNCTION tierlog_immutable() RETURNS trigger"
                " LANGUAGE plpgsql AS $$BEGIN IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;"
                " RETURN NEW; END$$",
                "function tierlog_immutable() was changed",
            ),
        ],
    )
    def test_a_changed_trigger_or_function_is_an_integrity_problem(
        self, pg: PostgresTarget, sql: str, problem: str
    ) -> None:
        """A trigger re-created under its name to do nothing, or a neutered function,
        is reported although every trigger name is still there and enabled."""
        with eventstore.open(pg.location) as journal:
            new_session(journal)
        with _connect(pg.location) as conn:
            conn.execute(sql.encode())
        with eventstore.open(pg.location, readonly=True) as journal:
            (finding,) = verify(journal)
        assert finding.check == "integrity"
        assert problem in finding.problem


class TestSpills:
    def test_a_spill_rolls_back_with_its_transaction(self, pg: PostgresTarget) -> None:
        """Spill bytes are written in the open transaction: if it fails, none remain."""
        with eventstore.open(pg.location) as journal:

            def spill_then_fail() -> None:
                with journal.recorder.transaction():
                    journal.spills.write(b"turns\n", lo=0, hi=1, earlier=())
                    raise RuntimeError("the decision failed after the spill")

            with pytest.raises(RuntimeError):
                spill_then_fail()
            with journal.recorder.transaction():
                kept = journal.spills.write(b"kept\n", lo=0, hi=1, earlier=())
        assert pg.rows("SELECT handle, bytes FROM spill_data") == [(kept.handle, 5)]

    def test_spills_are_portable_and_stored_linearly(
        self, pg: PostgresTarget, tmp_path: Path
    ) -> None:
        """A spill has the handle it gets on SQLite; a longer one that starts with an
        earlier one stores only the bytes after it, and both read back whole."""
        with eventstore.open(pg.location) as journal, eventstore.open(tmp_path / "f.db") as file:
            spilled = [new_session(j, "s") for j in (journal, file)]
            for s in spilled:
                fill(s, 4)
                s.spill(0, 2)
                s.spill(0, 4)
            pg_spills, file_spills = (s.state.spills for s in spilled)
            assert [sp.handle for sp in pg_spills] == [sp.handle for sp in file_spills]
            first, second = pg_spills
            stored = dict(pg.rows("SELECT handle, octet_length(data) FROM spill_data"))
            assert stored[second.handle] == second.bytes - first.bytes
            assert journal.read_spill("s", second.handle) == file.read_spill("s", second.handle)

    def test_other_bytes_under_a_taken_handle_are_refused(self, pg: PostgresTarget) -> None:
        """The same spill row again is a no-op; other bytes under its handle, an error."""
        with eventstore.open(pg.location) as journal:
            recorder = journal.recorder
            assert isinstance(recorder, PostgresRecorder)
            recorder.write_spill("h", "a" * 64, 4, None, 0, b"one\n")
            recorder.write_spill("h", "a" * 64, 4, None, 0, b"one\n")
            with pytest.raises(eventstore.IntegrityError, match="other bytes"):
                recorder.write_spill("h", "b" * 64, 4, None, 0, b"two\n")
        assert pg.spill("h") == b"one\n"

    def test_an_orphan_row_is_not_said_to_be_removable_by_clean(
        self, pg: PostgresTarget, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """verify's note on a hand-written spill row says --clean cannot remove it."""
        eventstore.open(pg.location).close()
        pg.tamper(
            "INSERT INTO spill_data (handle, sha256, bytes, data) VALUES ('aa/zz.spill', 'x', 1,"
            " '\\x00')"
        )
        assert main(["verify", pg.location]) == 0
        out = capsys.readouterr().out
        assert "aa/zz.spill" in out
        assert "--clean cannot remove it" in out
        assert "--clean removes it" not in out


class TestLocking:
    def test_writers_on_other_sessions_do_not_wait(self, pg: PostgresTarget) -> None:
        """A transaction holding session a's lock does not delay a commit on session b
        (one that waited on a's holder, stuck in this very thread, would time out)."""
        holder = PostgresRecorder(pg.location)
        other = PostgresRecorder(pg.location, lock_timeout=5)
        with holder.transaction():
            holder.append("a", [TURN], expected_version=0)
            other.append("b", [TURN], expected_version=0)  # commits while a is locked
        assert (holder.head("a").version, holder.head("b").version) == (1, 1)
        holder.close()
        other.close()

    def test_a_stalled_lock_holder_makes_a_waiting_writer_give_up(self, pg: PostgresTarget) -> None:
        """A writer waits for a stalled holder of the session's lock only up to its
        lock_timeout (its connection's setting), then gets a ConcurrencyError and writes
        nothing."""
        holder = PostgresRecorder(pg.location)
        waiter = PostgresRecorder(pg.location, lock_timeout=0.3)
        setting = list(waiter.query("SELECT current_setting('lock_timeout')", timeout=5).rows)
        assert setting == [("300ms",)]
        with holder.transaction():
            holder.head("s")  # takes the lock, then stalls
            with pytest.raises(eventstore.ConcurrencyError, match="lock"):
                waiter.append("s", [TURN], expected_version=0)
        assert waiter.head("s").version == 0
        holder.close()
        waiter.close()

    def test_the_lock_timeout_defaults_to_30_s_unless_configured(self, pg: PostgresTarget) -> None:
        """Without a setting a writer waits 30 s; a URL's own lock_timeout is kept."""
        plain = PostgresRecorder(pg.location)
        sep = "&" if "?" in pg.location else "?"
        configured = PostgresRecorder(f"{pg.location}{sep}options=-c%20lock_timeout%3D7s")
        shown = [
            list(r.query("SELECT current_setting('lock_timeout')", timeout=5).rows)
            for r in (plain, configured)
        ]
        assert shown == [[("30s",)], [("7s",)]]
        plain.close()
        configured.close()

    def test_a_writer_on_the_same_session_waits_then_sees_the_new_head(
        self, pg: PostgresTarget
    ) -> None:
        """The second writer queues on the session's lock, then finds a moved head."""
        first, second = PostgresRecorder(pg.location), PostgresRecorder(pg.location)
        outcome: list[str] = []

        def late_writer() -> None:
            try:
                second.append("s", [TURN], expected_version=0)
                outcome.append("committed")
            except eventstore.ConcurrencyError as exc:
                outcome.append(str(exc))

        with first.transaction():
            first.append("s", [TURN], expected_version=0)
            thread = threading.Thread(target=late_writer)
            thread.start()
            _until_waiting_for_a_lock(pg, second)
            assert outcome == []
        thread.join(30)
        assert outcome == ["session 's' is at version 1, expected 0"]
        first.close()
        second.close()


class TestQuery:
    @pytest.mark.parametrize(
        "sql",
        [
            "SELECT 1; DELETE FROM events",
            "COPY (SELECT 1) TO PROGRAM 'true'",
            "SET default_transaction_read_only = off",
            "WITH gone AS (DELETE FROM events RETURNING 1) SELECT count(*) FROM gone",
        ],
    )
    def test_only_one_reading_statement_runs(self, pg: PostgresTarget, sql: str) -> None:
        """Several statements, COPY, SET and writing CTEs are refused; nothing changes."""
        with eventstore.open(pg.location) as journal:
            new_session(journal)
            before = pg.rows()
            with pytest.raises(eventstore.InvalidArgument):
                journal.recorder.query(sql, timeout=5)
        assert pg.rows() == before

    def test_the_query_leaves_no_large_object_and_no_notification(self, pg: PostgresTarget) -> None:
        """lo_from_bytea and pg_notify pass READ ONLY, but the query's transaction is
        rolled back: no large object stays and no NOTIFY is delivered."""
        listener = _connect(pg.location)
        listener.execute("LISTEN tierlog_probe")
        with eventstore.open(pg.location) as journal:
            new_session(journal)
            journal.recorder.query(
                "SELECT lo_from_bytea(0, 'x'), pg_notify('tierlog_probe', 'x')", timeout=5
            )
        assert pg.rows("SELECT count(*) FROM pg_largeobject_metadata") == [(0,)]
        assert list(listener.notifies(timeout=0.5, stop_after=1)) == []
        listener.close()

    def test_numbers_come_back_as_python_numbers(self, pg: PostgresTarget) -> None:
        """sum() of bigints (numeric on PostgreSQL) is an int, as on SQLite."""
        with eventstore.open(pg.location) as journal:
            s = new_session(journal)
            fill(s, 4)
            s.truncate(0, 2, "budget")
            result = journal.recorder.query(
                "SELECT session_id, count(*) AS n, sum(hi - lo) AS span FROM truncations"
                " GROUP BY 1",
                timeout=5,
            )
            assert list(result.rows) == [("s", 1, 2)]


class TestSameOnBothBackends:
    def test_the_incidents_fold_to_the_same_state_on_both(
        self, tmp_path: Path, pg_url: str
    ) -> None:
        """Both incidents, run on a file and on PostgreSQL, record the same events and
        reach the same state sha256 (spill handles aside: they name where bytes live)."""
        states = []
        for location in (str(tmp_path / "file.db"), pg_url):
            with eventstore.open(location) as journal:
                dropped_rejection(journal, lambda _: None)
                evicted_constraint(journal, lambda _: None)
                states.append(
                    {
                        sid: (
                            journal.session(sid).state.sha256,
                            [type(e).__name__ for e in journal.session(sid).events()],
                        )
                        for sid in journal.sessions()
                    }
                )
        file, server = states
        assert {k: v[1] for k, v in server.items()} == {k: v[1] for k, v in file.items()}
        spill_free = [sid for sid in file if sid.startswith("incident-1")]
        assert {sid: server[sid][0] for sid in spill_free} == {
            sid: file[sid][0] for sid in spill_free
        }


class TestNulCharacters:
    def _record_nul(self, journal: eventstore.Journal) -> None:
        s = new_session(journal)
        s.append_turn("user", "keep \\u0000 literal", 4)
        s.state_constraint("no-etc", "never touch /etc\x00")
        s.open_call("call-1", "tool_call", "grep\x00\x00")

    def test_views_and_audit_read_a_nul_as_a_replacement_character(
        self, pg: PostgresTarget
    ) -> None:
        """A NUL in agent text reads as U+FFFD in the views (an escaped backslash stays
        text), the audit runs, and the stored payload keeps its \\u0000."""
        with eventstore.open(pg.location) as journal:
            self._record_nul(journal)
            detail = list(
                journal.recorder.query(
                    "SELECT kind, detail FROM obligations WHERE outstanding ORDER BY version",
                    timeout=5,
                ).rows
            )
            turns = list(journal.recorder.query("SELECT content FROM turns", timeout=5).rows)
            report = audit(journal)
            assert list(verify(journal)) == []
        assert detail == [
            ("constraint", "never touch /etc\ufffd"),
            ("open_call", "grep\ufffd\ufffd"),
        ]
        assert turns == [("keep \\u0000 literal",)]
        assert report.sessions["s"] is not None
        stored = pg.rows("SELECT payload FROM events WHERE type = 'ConstraintStated'")
        assert "\\u0000" in stored[0][0]

    def test_an_older_journals_views_read_only_are_a_note(self, pg: PostgresTarget) -> None:
        """Views an earlier release made (its views version), read only: a note of
        verify, not "changed (it is not tierlog's)"; a writer's open remakes them."""
        eventstore.open(pg.location).close()
        pg.tamper("UPDATE tierlog_meta SET value = '2' WHERE key = 'views'")
        with eventstore.open(pg.location, readonly=True) as journal:
            found = [(f.check, f.fatal) for f in verify(journal)]
            assert found == [("view", False)]
            assert "views version 2, this release's" in journal.recorder.view_notes()[0]
        eventstore.open(pg.location).close()
        with eventstore.open(pg.location, readonly=True) as journal:
            assert verify(journal) == []

    def test_an_older_journal_gets_the_new_views(self, pg: PostgresTarget) -> None:
        """A journal whose views predate the NUL handling has them replaced when a
        writer opens it."""
        eventstore.open(pg.location).close()
        pg.tamper("DELETE FROM tierlog_meta WHERE key = 'views'")
        pg.tamper("CREATE OR REPLACE VIEW resumes AS SELECT * FROM resumes WHERE false")
        with eventstore.open(pg.location) as journal:
            self._record_nul(journal)
            result = journal.recorder.query("SELECT count(*) FROM resumes", timeout=5)
            assert list(result.rows) == [(0,)]
        assert pg.rows("SELECT value FROM tierlog_meta WHERE key = 'views'") == [(VIEWS_VERSION,)]
        definition = pg.rows("SELECT pg_get_viewdef('resumes')")[0][0]
        assert "u0000" in definition
