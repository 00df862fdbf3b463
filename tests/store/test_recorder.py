"""The storage port's contract on tierlog's two backends: the suite a third party runs
(``eventstore.testing``), subclassed for SQLite and PostgreSQL, and what each backend
adds."""

from __future__ import annotations

import itertools
import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import eventstore
import reducers as r
from eventstore._sqlite._recorder import SqliteRecorder
from eventstore._store._chain import check_chain
from eventstore._store._clock import utc_now
from eventstore._store._codec import to_payload
from eventstore._store._recorder import Recorder
from eventstore.testing import RecorderContract, samples
from eventstore.testing._samples import TURN, turns
from tests import strategies
from tests.helpers import new_session

_seen = itertools.count()


class _Ours(RecorderContract):
    """The contract, and what every tierlog backend passes besides."""

    def test_the_samples_hold_every_event_type(self) -> None:
        """The suite's samples are one event of each type tierlog knows."""
        assert [type(event).__name__ for event in samples()] == list(r.EVENT_TYPES)

    @settings(
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors]
    )
    @given(event=strategies.events())
    def test_every_event_type_round_trips_byte_identically(
        self, recorder: Recorder, event: r.Event
    ) -> None:
        """Stored and read back, any event decodes equal and its payload bytes are unchanged."""
        sid = f"rt{next(_seen)}"
        recorder.append(sid, [event], expected_version=0)
        (row,) = recorder.read(sid)
        assert row.payload == to_payload(event)
        assert row.event == event
        assert row.type == type(event).__name__
        assert check_chain(recorder, sid) is None


class TestSqliteRecorder(_Ours):
    """The embedded backend."""

    @pytest.fixture(name="recorder")
    def _recorder(self, tmp_path: Path) -> Iterator[Recorder]:
        recorder = SqliteRecorder(tmp_path / "store.db")
        yield recorder
        recorder.close()

    @pytest.fixture(name="another_recorder")
    def _another_recorder(self, tmp_path: Path) -> Iterator[Recorder]:
        another = SqliteRecorder(tmp_path / "store.db")
        yield another
        another.close()

    def test_location_is_the_file(self, tmp_path: Path) -> None:
        """Messages name the journal file."""
        store = SqliteRecorder(tmp_path / "x.db")
        assert store.location == str(tmp_path / "x.db")
        store.close()

    def test_query_rows_stream_and_closing_lifts_the_limits(self, tmp_path: Path) -> None:
        """Rows come one at a time (an endless query too); closing early lifts the limits."""
        store = SqliteRecorder(tmp_path / "x.db")
        store.append("s", turns(3), expected_version=0)
        endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
        with store.query(endless, timeout=5) as result:
            rows = iter(result.rows)
            assert [next(rows) for _ in range(3)] == [(1,), (2,), (3,)]
        store.append("s", [TURN], expected_version=3)
        assert store.head("s")[0] == 4
        store.close()

    def test_a_query_lifts_its_length_limit(self, tmp_path: Path) -> None:
        """The per-value memory limit holds while the query runs and is restored after."""
        store = SqliteRecorder(tmp_path / "x.db")
        before = store.conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
        with store.query("SELECT 1", timeout=5, heap_limit=2**40) as result:
            assert store.conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) == min(before, 2**40)
            assert list(result.rows) == [(1,)]
        assert store.conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) == before
        store.close()

    def test_a_corrupt_file_is_an_integrity_error(self, tmp_path: Path) -> None:
        """A journal whose schema page is damaged is refused as corrupt, not as foreign."""
        path = tmp_path / "x.db"
        SqliteRecorder(path).close()
        data = bytearray(path.read_bytes())
        data[100 + 8 : 100 + 400] = b"\xff" * 392
        path.write_bytes(bytes(data))
        with pytest.raises(eventstore.IntegrityError, match="is corrupt"):
            SqliteRecorder(path)

    def test_head_sees_another_connections_commit(self, tmp_path: Path) -> None:
        """A head this connection remembers is read again once another connection
        commits (PRAGMA data_version), and its own appends move it."""
        one, two = SqliteRecorder(tmp_path / "x.db"), SqliteRecorder(tmp_path / "x.db")
        one.append("s", [TURN], expected_version=0)
        assert one.head("s") == two.head("s")
        assert one.head("s")[0] == 1
        two.append("s", [TURN], expected_version=1)
        assert one.head("s") == two.head("s") == (2, two.head("s")[1])
        one.append("s", [TURN], expected_version=2)
        assert two.head("s")[0] == one.head("s")[0] == 3
        with pytest.raises(eventstore.ConcurrencyError):
            two.append("s", [TURN], expected_version=2)
        one.close()
        two.close()

    def test_clock_is_isoformat_utc_with_microseconds(self) -> None:
        """utc_now writes datetime.isoformat's UTC form, to the microsecond, and the time."""
        before = datetime.now(UTC)
        stamp = utc_now()
        after = datetime.now(UTC)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", stamp)
        parsed = datetime.fromisoformat(stamp)
        assert parsed.isoformat(timespec="microseconds") == stamp
        assert before - timedelta(milliseconds=1) <= parsed <= after


class TestPostgresRecorder(_Ours):
    """The server backend, on a fresh schema of the throwaway cluster."""

    @pytest.fixture(name="recorder")
    def _recorder(self, pg_url: str) -> Iterator[Recorder]:
        from eventstore._postgres import PostgresRecorder

        recorder = PostgresRecorder(pg_url)
        yield recorder
        recorder.close()

    @pytest.fixture(name="another_recorder")
    def _another_recorder(self, pg_url: str) -> Iterator[Recorder]:
        from eventstore._postgres import PostgresRecorder

        another = PostgresRecorder(pg_url)
        yield another
        another.close()

    @pytest.mark.parametrize("snapshot", [False, True])
    def test_a_checked_commit_is_two_round_trips(self, pg_url: str, snapshot: bool) -> None:
        """A session's commit costs two round trips (BEGIN, lock and head; the rows
        and COMMIT), one that also saves a snapshot too: the head is read once."""
        with eventstore.open(pg_url, snapshot_every=1 if snapshot else 0) as journal:
            s = new_session(journal)
            wire = journal.recorder.wire  # type: ignore[attr-defined]
            before = wire.flushes
            s.append_turn("user", "x", 1)
            assert wire.flushes - before == 2
            assert (journal.snapshots.check("s") is not None) is snapshot


class TestTheExpectedVersion:
    """The expected version of one commit is checked once, before anything is decided."""

    @pytest.fixture(name="checks")
    def _checks(self, monkeypatch: pytest.MonkeyPatch) -> list[int]:
        """Each expected-version check made, by the session or by the append path."""
        from eventstore import _session
        from eventstore._store import _append

        made: list[int] = []
        check = _append.expect_version

        def counted(session_id: str, version: int, expected: int) -> None:
            made.append(expected)
            check(session_id, version, expected)

        monkeypatch.setattr(_session, "expect_version", counted)
        monkeypatch.setattr(_append, "expect_version", counted)
        return made

    def test_once_per_commit(self, db_path: Path, checks: list[int]) -> None:
        """A session's commit at an expected version checks it once; so does a direct
        append; a commit without one checks nothing (its head is handed back whole)."""
        with eventstore.open(db_path) as journal:
            s = new_session(journal)
            checks.clear()
            s.append_turn("user", "x", 1, expected_version=1)
            assert checks == [1]
            s.append_turn("user", "y", 1)
            assert checks == [1]
            journal.recorder.append("s", [TURN], expected_version=3)
            assert checks == [1, 3]

    def test_a_stale_caller_is_told_before_its_command_is_judged(self, db_path: Path) -> None:
        """A command that is invalid only on the state the caller did not see (the call it
        resolves was resolved meanwhile) is a ConcurrencyError, which a caller retries on
        the new state, not an InvalidEvent; nothing is written."""
        with eventstore.open(db_path) as journal, eventstore.open(db_path) as other:
            s = new_session(journal)
            s.open_call("c1", "tool_call", "grep")
            seen = s.version
            other.session("s").resolve_call("c1", "done")
            with pytest.raises(eventstore.ConcurrencyError, match="expected 2"):
                s.resolve_call("c1", "done", expected_version=seen)
            assert s.version == 3
