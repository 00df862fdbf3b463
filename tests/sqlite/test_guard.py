"""tierlog sql's guard on SQLite: no native pointers, temporary storage inside the
memory limit."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventstore._sqlite import SqliteRecorder
from reducers import InvalidArgument

SORT = (  # a sort of ~3,000,000 x 200 bytes: about 600 MB of temporary storage on disk
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000000)"
    " SELECT i, randomblob(200) FROM n ORDER BY 2"
)


@pytest.fixture(name="store")
def _store(tmp_path: Path) -> Iterator[SqliteRecorder]:
    store = SqliteRecorder(tmp_path / "x.db")
    yield store
    store.close()


class TestPointers:
    @pytest.mark.parametrize(
        "sql",
        [
            "SELECT fts3_tokenizer('simple')",
            "SELECT FTS3_TOKENIZER('simple', x'0000000000000000')",
            "SELECT load_extension('/tmp/evil.so')",
            "SELECT fts5(NULL)",
            "SELECT * FROM (SELECT fts3_tokenizer('porter'))",
        ],
    )
    def test_a_pointer_function_is_refused(self, store: SqliteRecorder, sql: str) -> None:
        """A function that hands out or takes a native pointer never runs: InvalidArgument
        naming it (however it is written)."""
        with pytest.raises(InvalidArgument, match=r"query refused: \w+\(\) hands out or takes"):
            list(store.query(sql, timeout=5).rows)

    def test_other_functions_still_run(self, store: SqliteRecorder) -> None:
        """json, string and aggregate functions are untouched, and the guard is lifted after."""
        with store.query("SELECT upper('a'), json_array(1), count(*)", timeout=5) as result:
            assert list(result.rows) == [("A", "[1]", 1)]
        assert store.conn.execute("SELECT fts3_tokenizer('simple')").fetchone()[0]


class TestTemporaryStorage:
    def test_a_big_sort_counts_against_the_memory_limit(self, tmp_path: Path) -> None:
        """Under a 64 MB limit the sort's temporary storage is heap, so the query stops
        with the memory message instead of writing hundreds of MB of temporary files
        (in a child: SQLite's heap limit is process-wide and only ever lowered)."""
        SqliteRecorder(tmp_path / "x.db").close()
        done = subprocess.run(
            [sys.executable, "-m", "eventstore", "sql", str(tmp_path / "x.db"), SORT,
             "--max-memory", "64", "--timeout", "120"],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 2
        assert "needs more than its memory limit of 64 MB" in done.stderr

    def test_the_temp_store_is_restored(self, store: SqliteRecorder) -> None:
        """After a query under a memory limit the connection's temp_store is as it was."""
        before = store.conn.execute("PRAGMA temp_store").fetchone()
        with store.query("SELECT 1", timeout=5, heap_limit=2**40) as result:
            assert list(result.rows) == [(1,)]
        assert store.conn.execute("PRAGMA temp_store").fetchone() == before
