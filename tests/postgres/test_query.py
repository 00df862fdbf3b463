"""tierlog sql on PostgreSQL: streamed through a server-side cursor, bounded in time on
the server and on the client, in memory whatever the result's size."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import eventstore
from eventstore._postgres import PostgresRecorder
from eventstore._postgres._query import FETCH
from reducers import InvalidArgument, JournalError
from tests.sql_memory import peak_rss

MANY = "SELECT g, md5(g::text) FROM generate_series(1, {n}) g"


@pytest.fixture(name="recorder")
def _recorder(pg_url: str) -> Iterator[PostgresRecorder]:
    recorder = PostgresRecorder(pg_url)
    yield recorder
    recorder.close()


class TestStreaming:
    def test_rows_come_a_fetch_at_a_time(self, recorder: PostgresRecorder) -> None:
        """Ten million rows: the first come at once, and closing early ends the query
        (the client never held more than a FETCH)."""
        with recorder.query(MANY.format(n=10_000_000), timeout=30) as result:
            rows = iter(result.rows)
            first = [next(rows) for _ in range(FETCH + 5)]
        assert first[0] == (1, "c4ca4238a0b923820dcc509a6f75849b")
        assert [r[0] for r in first] == list(range(1, FETCH + 6))
        assert list(recorder.query("SELECT 1", timeout=5).rows) == [(1,)]  # usable again

    def test_the_client_deadline_holds_across_fetches(self, recorder: PostgresRecorder) -> None:
        """Each FETCH is quick, so statement_timeout never fires: the client's deadline
        stops the walk through an endless result."""
        endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
        result = recorder.query(endless, timeout=1)
        with pytest.raises(InvalidArgument, match=r"stopped after 1 s \(--timeout\)"):
            for _ in result.rows:
                pass

    def test_a_slow_fetch_is_cancelled_on_the_server(self, recorder: PostgresRecorder) -> None:
        """A FETCH that runs past the timeout is stopped by statement_timeout (and the
        client's timer): InvalidArgument, and the journal answers again."""
        slow = "SELECT g, pg_sleep(0.01) FROM generate_series(1, 100000) g"
        with pytest.raises(InvalidArgument, match="stopped after"):
            list(recorder.query(slow, timeout=0.5).rows)
        assert recorder.head("s").version == 0

    @pytest.mark.parametrize(
        ("sql", "message"),
        [
            ("SELECT 1; SELECT 2", "query failed"),
            ("WITH x AS (DELETE FROM events RETURNING *) SELECT * FROM x", "query failed"),
        ],
    )
    def test_what_is_not_one_read_is_refused(
        self, recorder: PostgresRecorder, sql: str, message: str
    ) -> None:
        """Two statements or a writing CTE: InvalidArgument, nothing written."""
        with pytest.raises(InvalidArgument, match=message):
            list(recorder.query(sql, timeout=5).rows)
        assert list(
            recorder.query("SELECT count(*) FROM pg_largeobject_metadata", timeout=5).rows
        ) == [(0,)]

    def test_explain_is_answered(self, recorder: PostgresRecorder) -> None:
        """EXPLAIN, which no cursor takes, comes back whole."""
        lines = list(recorder.query("EXPLAIN SELECT * FROM turns", timeout=5).rows)
        assert lines
        assert all(isinstance(line[0], str) for line in lines)

    def test_the_journal_waits_while_rows_stream(self, recorder: PostgresRecorder) -> None:
        """A write while a query's rows stream is a clear error; after close, it works."""
        result = recorder.query(MANY.format(n=100_000), timeout=30)
        with pytest.raises(JournalError, match="still streaming"), recorder.transaction():
            pass
        result.close()
        with recorder.transaction():
            assert recorder.head("s").version == 0


class TestBoundedMemory:
    def test_the_cli_prints_many_rows_in_little_memory(self, pg_url: str) -> None:
        """300,000 rows printed by a child process: its peak RSS stays far below 200 MB
        (``make fuzz`` runs 20,000,000)."""
        eventstore.open(pg_url).close()
        argv = ["sql", pg_url, MANY.format(n=300_000), "--max-rows", "0", "--timeout", "300"]
        code, _, peak_mb = peak_rss(argv)
        assert code == 0
        assert peak_mb < 200

    @pytest.mark.parametrize("mode", [[], ["--json"]], ids=["table", "json"])
    def test_wide_rows_are_printed_in_little_memory(self, pg_url: str, mode: list[str]) -> None:
        """1,500 rows of 200,000 characters (300 MB) printed by a child process: a FETCH
        brings as many rows as fit in a few MB, and the table aligns on cut cells, so
        its peak RSS stays below 200 MB (before: a 1,000-row FETCH of them, 1.2 GB)."""
        eventstore.open(pg_url).close()
        wide = "SELECT g, repeat('x', 200000) AS text FROM generate_series(1, 1500) g"
        argv = ["sql", pg_url, wide, *mode, "--max-bytes", "0", "--timeout", "300"]
        code, _, peak_mb = peak_rss(argv)
        assert code == 0
        assert peak_mb < 200


class TestNothingOutlivesTheQuery:
    def test_a_session_advisory_lock_is_let_go(
        self, recorder: PostgresRecorder, pg_url: str
    ) -> None:
        """A lock the query took for the whole session (the rollback keeps those) is
        released when the query ends: no writer elsewhere is kept waiting by an audit."""
        import psycopg

        key = "SELECT pg_advisory_lock(1953064306, hashtext('s'))"
        assert len(list(recorder.query(key, timeout=5).rows)) == 1
        with psycopg.connect(pg_url, autocommit=True) as other:
            took = other.execute("SELECT pg_try_advisory_lock(1953064306, hashtext('s'))")
            assert took.fetchone() == (True,)
