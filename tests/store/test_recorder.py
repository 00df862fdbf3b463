"""The Recorder port's contract: every backend passes these same tests.

``RecorderContract`` holds the tests; a backend's class subclasses it and says
how to make a fresh, empty recorder (``create_recorder``), in the style of the
eventsourcing library's recorder test cases.
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
import itertools
import json
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
from eventstore._store._chain import GENESIS, check_chain
from eventstore._store._clock import utc_now
from eventstore._store._codec import to_payload
from eventstore._store._recorder import Recorder
from tests import strategies

TURN = r.TurnAppended(index=0, role="user", content="hello", tokens=3)
_seen = itertools.count()


def _turns(n: int) -> list[r.Event]:
    return [r.TurnAppended(index=i, role="user", content=f"t{i}", tokens=2) for i in range(n)]


class RecorderContract(abc.ABC):
    """What every Recorder does; subclasses provide ``create_recorder``."""

    @abc.abstractmethod
    def create_recorder(self, tmp_path: Path) -> Recorder:
        """A fresh, empty recorder of the backend under test."""

    @pytest.fixture(name="store")
    def _store(self, tmp_path: Path) -> Iterator[Recorder]:
        recorder = self.create_recorder(tmp_path)
        yield recorder
        recorder.close()

    # -- appending ---------------------------------------------------------------------
    def test_empty_session_head_is_genesis(self, store: Recorder) -> None:
        """A session with no events is at version 0 with the genesis hash."""
        assert store.head("nobody") == (0, GENESIS)

    def test_expected_version_mismatch_writes_nothing(self, store: Recorder) -> None:
        """A stale expected version is a ConcurrencyError and the batch is not written."""
        store.append("s", [TURN], expected_version=0)
        with pytest.raises(eventstore.ConcurrencyError, match="at version 1, expected 0"):
            store.append("s", [TURN, TURN], expected_version=0)
        assert store.head("s")[0] == 1

    def test_a_closed_store_is_a_journal_error(self, tmp_path: Path) -> None:
        """After close (idempotent), reading and writing are each a JournalError,
        never the driver's own error."""
        store = self.create_recorder(tmp_path)
        store.append("s", [TURN], expected_version=0)
        store.close()
        store.close()
        for use in (
            lambda: store.head("s"),
            lambda: list(store.read("s")),
            lambda: store.append("s", [TURN], expected_version=1),
            lambda: store.sessions(),
        ):
            with pytest.raises(eventstore.JournalError):
                use()

    def test_batch_is_atomic(self, store: Recorder) -> None:
        """A batch with one bad event writes none of its events."""
        with pytest.raises(eventstore.InvalidEvent):
            store.append("s", [TURN, "not an event", TURN], expected_version=0)  # type: ignore[list-item]
        assert store.head("s") == (0, GENESIS)

    def test_rollback_on_error_inside_transaction(self, store: Recorder) -> None:
        """An exception after the insert, inside the transaction, rolls the insert back."""

        def decide_then_fail() -> None:
            with store.transaction():
                store.append("s", [TURN, TURN], expected_version=0)
                raise RuntimeError("decision failed after the insert")

        with pytest.raises(RuntimeError):
            decide_then_fail()
        assert store.head("s")[0] == 0

    def test_nested_transaction_rolls_back_only_itself(self, store: Recorder) -> None:
        """An error in a nested block undoes that block; the outer one still commits."""

        def inner() -> None:
            with store.transaction():
                store.append("b", [TURN], expected_version=0)
                raise RuntimeError("inner")

        with store.transaction():
            store.append("a", [TURN], expected_version=0)
            with pytest.raises(RuntimeError):
                inner()
        assert (store.head("a")[0], store.head("b")[0]) == (1, 0)

    def test_a_callers_head_is_checked_never_trusted(self, store: Recorder) -> None:
        """Inside a transaction, ``head_hash`` and ``expected_version`` are checked
        against the head read under the lock: a hash of another head, a head read
        before the transaction, or one a rolled-back savepoint wrote is a
        ConcurrencyError, and nothing is written."""
        store.append("s", _turns(4), expected_version=0)
        store.append("t", _turns(2), expected_version=0)
        before = store.head("s")

        def inner() -> None:
            with store.transaction():
                store.append("s", [TURN], expected_version=4)
                raise RuntimeError("inner")

        with store.transaction():
            head = store.head("s")
            for version, stale in [
                (4, "f" * 64),  # no head's hash
                (4, store.head("t").hash),  # another session's
                (9, head.hash),  # a version beyond the head
            ]:
                with pytest.raises(eventstore.ConcurrencyError):
                    store.append("s", [TURN], expected_version=version, head_hash=stale)
            with pytest.raises(RuntimeError):
                inner()
            with pytest.raises(eventstore.ConcurrencyError):
                store.append("s", [TURN], expected_version=5, head_hash="0" * 64)
        with store.transaction():  # a head read before the transaction is checked too
            assert store.append("s", [TURN], expected_version=4, head_hash=before.hash) == 5
        assert [r.version for r in store.read("s")] == [1, 2, 3, 4, 5]
        assert check_chain(store, "s") is None

    @pytest.mark.parametrize("version", [-1, 2**63, 4.5, "4", True])
    def test_an_expected_version_that_is_no_version_is_invalid(
        self, store: Recorder, version: object
    ) -> None:
        """A negative, too large, fractional, text or boolean expected version is
        InvalidEvent, and nothing is written."""
        store.append("s", _turns(4), expected_version=0)
        with store.transaction():
            head = store.head("s")
            with pytest.raises(eventstore.InvalidEvent, match="expected_version"):
                store.append("s", [TURN], expected_version=version, head_hash=head.hash)  # type: ignore[arg-type]
        assert store.head("s") == head

    def test_batch_versions_are_consecutive(self, store: Recorder) -> None:
        """A batch takes the next versions in order."""
        assert store.append("s", [TURN] * 3, expected_version=0) == 3
        assert [row.version for row in store.read("s")] == [1, 2, 3]

    def test_sessions_are_independent_streams(self, store: Recorder) -> None:
        """Versions count per session; sessions() lists each once, sorted."""
        store.append("b", [TURN] * 2, expected_version=0)
        store.append("a", [TURN], expected_version=0)
        assert store.sessions() == ["a", "b"]
        assert (store.head("a")[0], store.head("b")[0]) == (1, 2)

    def test_hash_chain_matches_an_independent_computation(self, store: Recorder) -> None:
        """hash = sha256(prev_hash + canonical JSON of the row), recomputed here by hand."""
        store.append("s", [TURN, r.Checkpointed(at=1)], expected_version=0)
        prev = "0" * 64
        for row in store.read("s"):
            body = {
                "payload": json.loads(row.payload),
                "recorded_at": row.recorded_at,
                "schema_version": 1,
                "session_id": "s",
                "type": row.type,
                "version": row.version,
            }
            canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            assert row.prev_hash == prev
            assert row.hash == hashlib.sha256((prev + canonical).encode()).hexdigest()
            prev = row.hash
        assert store.head("s") == (2, prev)

    # -- reading -----------------------------------------------------------------------
    def test_read_streams_lazily(self, store: Recorder) -> None:
        """read() is a generator over a cursor: taking one row does not fetch the rest."""
        store.append("s", [TURN] * 50, expected_version=0)
        stream = store.read("s", start=10)
        first = next(stream)
        assert (first.version, next(stream).version) == (10, 11)
        assert [row.version for row in store.read("s", start=48, stop=49)] == [48, 49]

    def test_read_payloads_match_read(self, store: Recorder) -> None:
        """The replay hot path yields the same (type, payload) as the full rows."""
        store.append("s", [*_turns(3), r.Checkpointed(at=3)], expected_version=0)
        full = [(row.type, row.payload) for row in store.read("s", start=2)]
        assert list(store.read_payloads("s", start=2)) == full
        assert list(store.read_payloads("s", start=2, stop=3)) == full[:2]

    def test_a_read_without_stop_ends_where_the_session_was(self, store: Recorder) -> None:
        """Rows appended while a read is under way are not read, and none is skipped:
        the read is every version up to the head it began at."""
        store.append("s", _turns(3_000), expected_version=0)  # pages of either backend
        rows, payloads = store.read("s"), store.read_payloads("s")
        first, _ = next(rows), next(payloads)
        store.append("s", _turns(3_400)[3_000:], expected_version=3_000)
        assert [first.version, *(row.version for row in rows)] == list(range(1, 3_001))
        assert len([_, *payloads]) == 3_000

    @pytest.mark.parametrize(
        ("start", "stop"), [(-1, None), (1, 2**63), ("1", None), (True, None), (1, 1.5)]
    )
    def test_a_read_of_no_range_is_invalid(
        self, store: Recorder, start: object, stop: object
    ) -> None:
        """Bounds that are not versions are InvalidArgument, before anything is read."""
        for read in (store.read, store.read_payloads):
            with pytest.raises(eventstore.InvalidArgument):
                read("s", start=start, stop=stop)  # type: ignore[arg-type]

    def test_turn_payloads_skip_other_events(self, store: Recorder) -> None:
        """turn_payloads reads only the turns between two versions."""
        events = [*_turns(2), r.CallOpened(call_id="c", kind="tool_call", name="x"), *_turns(3)[2:]]
        store.append("s", events, expected_version=0)
        contents = [json.loads(p)["content"] for p in store.turn_payloads("s", 1, 4)]
        assert contents == ["t0", "t1", "t2"]

    @settings(
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors]
    )
    @given(event=strategies.events())
    def test_every_event_type_round_trips_byte_identically(
        self, store: Recorder, event: r.Event
    ) -> None:
        """Stored and read back, an event decodes equal and its payload bytes are unchanged."""
        sid = f"rt{next(_seen)}"
        store.append(sid, [event], expected_version=0)
        (row,) = store.read(sid)
        assert row.payload == to_payload(event)
        assert row.event == event
        assert row.type == type(event).__name__
        assert check_chain(store, sid) is None

    # -- snapshots, audits, queries ----------------------------------------------------
    def test_snapshot_round_trip_replaces_changed_chunks(self, store: Recorder) -> None:
        """A saved snapshot loads back; a later save replaces header and changed chunks."""
        assert store.load_snapshot("s") is None
        with store.transaction():
            store.save_snapshot("s", 5, "a" * 64, b"head-5", [("tok", 0, b"c0"), ("tok", 1, b"c1")])
        with store.transaction():
            store.save_snapshot("s", 9, "b" * 64, b"head-9", [("tok", 1, b"c1'")])
        snap = store.load_snapshot("s")
        assert snap is not None
        assert (snap.version, snap.sha256, snap.header) == (9, "b" * 64, b"head-9")
        assert list(snap.chunks) == [("tok", b"c0"), ("tok", b"c1'")]

    def test_summaries_and_audit_rows_come_from_the_events(self, store: Recorder) -> None:
        """Counts and audit rows reflect refusals, invalidations and raw fallbacks."""
        violation = r.Violation(rule="M2", name="negative_fact_dropped", message="dropped x")
        events: list[r.Event] = [
            *_turns(2),
            r.MarkerRefused(marker_id="m3", node_id="n1", violations=[violation]),
            r.MarkerInvalidated(marker_id="m1", rule="M3", reason="re-framed"),
            r.Resumed(
                marker_id="m1",
                source="raw_checkpoint",
                checkpoint_at=0,
                context_sha256="0" * 64,
                reason="discarded",
            ),
        ]
        store.append("s", events, expected_version=0)
        (summary,) = store.summaries()
        assert (summary.events, summary.turns, summary.refusals) == (5, 2, 1)
        assert (summary.invalidations, summary.raw_fallbacks) == (1, 1)
        rows = store.audit_rows("s")
        assert [(m.marker_id, m.rules) for m in rows.marker_refusals] == [("m3", "M2")]
        assert json.loads(rows.marker_refusals[0].violations)[0]["message"] == "dropped x"
        assert [(i.version, i.rule) for i in rows.marker_invalidations] == [(4, "M3")]
        assert [(f.version, f.checkpoint_at) for f in rows.raw_fallbacks] == [(5, 0)]
        assert rows.compaction_refusals == ()

    def test_query_reads_views(self, store: Recorder) -> None:
        """A read-only query sees the audit views, with column names."""
        store.append("s", _turns(3), expected_version=0)
        result = store.query("SELECT turn_index, content FROM turns ORDER BY version", timeout=5)
        assert result.columns == ("turn_index", "content")
        assert [tuple(row) for row in result.rows] == [(0, "t0"), (1, "t1"), (2, "t2")]

    @pytest.mark.parametrize(
        "sql", ["DELETE FROM events", "INSERT INTO snapshots VALUES ('x', 1, 'y', 'z')", ""]
    )
    def test_query_refuses_writes_and_nothing(self, store: Recorder, sql: str) -> None:
        """A query that writes (or is empty) is InvalidArgument, and nothing changes."""
        store.append("s", [TURN], expected_version=0)
        with pytest.raises(eventstore.InvalidArgument):
            store.query(sql, timeout=5)
        assert store.head("s")[0] == 1

    def test_query_stops_at_its_timeout(self, store: Recorder) -> None:
        """An endless query is stopped after the timeout with InvalidArgument."""
        endless = (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
        )
        with pytest.raises(eventstore.InvalidArgument, match="stopped"):
            store.query(endless, timeout=0.2)

    @pytest.mark.parametrize("timeout", [float("nan"), float("inf"), 0, -1.0])
    def test_query_refuses_a_timeout_that_is_not_a_duration(
        self, store: Recorder, timeout: float
    ) -> None:
        """nan, inf, zero and negative timeouts are InvalidArgument on every backend."""
        with pytest.raises(eventstore.InvalidArgument, match="positive, finite"):
            store.query("SELECT 1", timeout=timeout)

    # -- verbatim copies (tierlog ship) -----------------------------------------------------
    def test_append_recorded_takes_any_iterable_and_only_rows(
        self, store: Recorder, tmp_path: Path
    ) -> None:
        """Rows given as an iterator are checked and written alike; plain tuples, or a
        row whose version is text, are refused and nothing is written."""
        source = SqliteRecorder(tmp_path / "source.db")
        source.append("s", _turns(3), expected_version=0)
        rows = list(source.read("s"))
        with pytest.raises(eventstore.InvalidArgument, match="Recorded rows"):
            store.append_recorded("s", [tuple(row) for row in rows])  # type: ignore[misc]
        with pytest.raises(eventstore.IntegrityError, match="not an integer"):
            store.append_recorded("s", [rows[0]._replace(version="1")])  # type: ignore[arg-type]
        assert store.head("s") == (0, GENESIS)
        assert store.append_recorded("s", iter(rows)) == 3  # type: ignore[arg-type]
        assert [r.hash for r in store.read("s")] == [r.hash for r in rows]

    def test_append_recorded_copies_rows_verbatim(self, store: Recorder, tmp_path: Path) -> None:
        """Rows recorded by another journal keep their versions, times and hashes."""
        source = SqliteRecorder(tmp_path / "source.db", clock=lambda: "2020-01-01T00:00:00+00:00")
        source.append("s", [TURN, *_turns(3)], expected_version=0)
        rows = list(source.read("s"))
        assert store.append_recorded("s", rows[:2]) == 2
        assert store.append_recorded("s", rows[2:]) == 4
        copied = [
            (r.version, r.payload, r.recorded_at, r.prev_hash, r.hash) for r in store.read("s")
        ]
        assert copied == [(r.version, r.payload, r.recorded_at, r.prev_hash, r.hash) for r in rows]

    def test_a_closed_query_leaves_the_store_writable(self, store: Recorder) -> None:
        """A query's result, closed, lifts its limits: the store appends again."""
        store.append("s", _turns(3), expected_version=0)
        with store.query("SELECT version FROM events ORDER BY version", timeout=5) as result:
            assert [tuple(row) for row in result.rows] == [(1,), (2,), (3,)]
        store.append("s", [TURN], expected_version=3)
        assert store.head("s")[0] == 4

    def test_heads_and_hashes(self, store: Recorder) -> None:
        """heads() gives every session's head; hash_at the hash at any version, or None."""
        store.append("b", _turns(2), expected_version=0)
        store.append("a", _turns(3), expected_version=0)
        heads = store.heads()
        assert list(heads) == ["a", "b"]
        assert (heads["a"], heads["b"]) == (store.head("a"), store.head("b"))
        assert store.hash_at("a", 3) == heads["a"].hash
        assert store.hash_at("a", 2) == next(store.read("a", start=2)).hash
        assert (store.hash_at("a", 4), store.hash_at("c", 1)) == (None, None)

    @pytest.mark.parametrize("attach", [True, False])
    def test_copy_session_is_verbatim(self, store: Recorder, tmp_path: Path, attach: bool) -> None:
        """A session copied from a scratch journal has its rows, hashes and all, whether
        the backend attaches the scratch file or reads it row by row."""
        source = SqliteRecorder(tmp_path / "scratch.db")
        source.append("s", _turns(4), expected_version=0)
        with (
            store.attached(source) if attach else contextlib.nullcontext(),
            store.transaction(),
        ):
            store.copy_session(source, "s")
        copied = [tuple(r)[1:] for r in store.read("s")]  # all but the global seq
        assert copied == [tuple(r)[1:] for r in source.read("s")]
        assert check_chain(store, "s") is None
        with pytest.raises(eventstore.JournalError):
            store.copy_session(source, "s")  # outside a transaction
        source.close()

    def test_a_fresh_store_has_no_integrity_problems(self, store: Recorder) -> None:
        """The backend's own integrity check passes on a sound database."""
        store.append("s", _turns(3), expected_version=0)
        assert store.integrity_problems() == []


class TestSqliteRecorder(RecorderContract):
    """The embedded backend."""

    def create_recorder(self, tmp_path: Path) -> Recorder:
        return SqliteRecorder(tmp_path / "store.db")

    def test_location_is_the_file(self, tmp_path: Path) -> None:
        """Messages name the journal file."""
        store = SqliteRecorder(tmp_path / "x.db")
        assert store.location == str(tmp_path / "x.db")
        store.close()

    def test_query_rows_stream_and_closing_lifts_the_limits(self, tmp_path: Path) -> None:
        """Rows come one at a time (an endless query too); closing early lifts the limits."""
        store = SqliteRecorder(tmp_path / "x.db")
        store.append("s", _turns(3), expected_version=0)
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


class TestPostgresRecorder(RecorderContract):
    """The server backend, on a fresh schema of the throwaway cluster."""

    @pytest.fixture(autouse=True)
    def _url(self, pg_url: str) -> None:
        self.url = pg_url

    def create_recorder(self, tmp_path: Path) -> Recorder:
        from eventstore._postgres._recorder import PostgresRecorder

        return PostgresRecorder(self.url)
