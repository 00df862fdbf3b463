"""The contract of ``AuditReads``: counts, audit rows, read-only SQL, heads, integrity.

``query`` runs SQL against tierlog's tables and audit views (``turns``, ``events``,
...), so this role is for a SQL backend; a backend without SQL leaves it out.
"""

from __future__ import annotations

import json
from typing import Protocol

import pytest

from eventstore import InvalidArgument
from eventstore._store import AuditReads, EventLog
from eventstore.testing._samples import TURN, turns
from reducers import MarkerInvalidated, MarkerRefused, Noted, Resumed, Spilled, Violation

ENDLESS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
# Statements that a writable connection of either SQL dialect runs without an error
# (on a schema without tierlog's append-only triggers), so that only a read-only query
# refuses them: an INSERT of ill-typed values would fail anyway, and prove nothing.
WRITES = [
    "UPDATE events SET payload = payload",
    "UPDATE snapshots SET sha256 = 'forged'",
    "DELETE FROM events",
    "DELETE FROM snapshot_chunks",
    "INSERT INTO snapshot_chunks (session_id, ledger, chunk, data)"
    " SELECT session_id, 'forged', 99, data FROM snapshot_chunks",
    "CREATE TABLE tierlog_probe (x INTEGER)",
    "DROP VIEW turns",
    "SELECT 1; DELETE FROM snapshot_chunks",
    "",
]


class _Audited(EventLog, AuditReads, Protocol):
    """A log with its audit reads (what the audit tests write, then read)."""


def _drained(recorder: AuditReads, sql: str) -> None:
    """Run ``sql`` and take every row (a backend may run it as its rows are taken)."""
    with recorder.query(sql, timeout=5) as result:
        list(result.rows)


def _spilled(sha: str) -> Spilled:
    return Spilled(lo=0, hi=1, handle=f"{sha[:2]}/{sha}.spill", sha256=sha, bytes=10)


class AuditReadsContract:
    """What ``sessions``, ``audit``, ``sql``, ``head`` and ``verify`` read; the
    subclass provides ``recorder``."""

    def test_summaries_and_audit_rows_come_from_the_events(self, recorder: _Audited) -> None:
        """Counts and audit rows reflect refusals, invalidations, raw fallbacks and notes."""
        violation = Violation(rule="M2", name="negative_fact_dropped", message="dropped x")
        recorder.append(
            "s",
            [
                *turns(2),
                MarkerRefused(marker_id="m3", node_id="n1", violations=[violation]),
                MarkerInvalidated(marker_id="m1", rule="M3", reason="re-framed"),
                Resumed(
                    marker_id="m1",
                    source="raw_checkpoint",
                    checkpoint_at=0,
                    context_sha256="0" * 64,
                    reason="discarded",
                ),
                Noted(kind="off_chain", text="skipped 2 entries", line=7, count=2),
            ],
            expected_version=0,
        )
        (summary,) = recorder.summaries()
        assert (summary.session_id, summary.events, summary.turns) == ("s", 6, 2)
        assert (summary.refusals, summary.invalidations, summary.raw_fallbacks) == (1, 1, 1)
        rows = recorder.audit_rows("s")
        assert [(m.marker_id, m.rules) for m in rows.marker_refusals] == [("m3", "M2")]
        assert json.loads(rows.marker_refusals[0].violations)[0]["message"] == "dropped x"
        assert [(i.version, i.rule) for i in rows.marker_invalidations] == [(4, "M3")]
        assert [(f.version, f.checkpoint_at) for f in rows.raw_fallbacks] == [(5, 0)]
        assert [(n.version, n.kind, n.line, n.count) for n in rows.notes] == [
            (6, "off_chain", 7, 2)
        ]
        assert rows.compaction_refusals == ()

    def test_query_reads_views(self, recorder: _Audited) -> None:
        """A read-only query sees the audit views, with column names."""
        recorder.append("s", turns(3), expected_version=0)
        with recorder.query(
            "SELECT turn_index, content FROM turns ORDER BY version", timeout=5
        ) as result:
            assert result.columns == ("turn_index", "content")
            assert [tuple(row) for row in result.rows] == [(0, "t0"), (1, "t1"), (2, "t2")]

    @pytest.mark.parametrize("sql", WRITES)
    def test_query_refuses_writes_and_nothing(self, recorder: _Audited, sql: str) -> None:
        """A query that would write on a writable connection (each of these runs there:
        an UPDATE of events or of no row, a DELETE, an INSERT of valid values, DDL, a
        write after a SELECT) or is empty is InvalidArgument, and nothing changes."""
        recorder.append("s", turns(2), expected_version=0)
        rows = [tuple(row) for row in recorder.read("s")]
        with pytest.raises(InvalidArgument):
            _drained(recorder, sql)
        assert [tuple(row) for row in recorder.read("s")] == rows
        with recorder.query("SELECT count(*) FROM turns", timeout=5) as result:
            assert [tuple(row) for row in result.rows] == [(2,)]
        with pytest.raises(InvalidArgument):
            recorder.query("SELECT x FROM tierlog_probe", timeout=5)

    def test_query_stops_at_its_timeout(self, recorder: _Audited) -> None:
        """An endless query is stopped after the timeout with InvalidArgument."""
        with pytest.raises(InvalidArgument, match="stopped"):
            recorder.query(ENDLESS, timeout=0.2)

    @pytest.mark.parametrize("timeout", [float("nan"), float("inf"), 0, -1.0])
    def test_query_refuses_a_timeout_that_is_not_a_duration(
        self, recorder: _Audited, timeout: float
    ) -> None:
        """nan, inf, zero and negative timeouts are InvalidArgument on every backend."""
        with pytest.raises(InvalidArgument, match="positive, finite"):
            recorder.query("SELECT 1", timeout=timeout)

    def test_a_closed_query_leaves_the_store_writable(self, recorder: _Audited) -> None:
        """A query's result, closed, lifts its limits: the store appends again."""
        recorder.append("s", turns(3), expected_version=0)
        with recorder.query("SELECT version FROM events ORDER BY version", timeout=5) as result:
            assert [tuple(row) for row in result.rows] == [(1,), (2,), (3,)]
        recorder.append("s", [TURN], expected_version=3)
        assert recorder.head("s")[0] == 4

    def test_heads_are_every_sessions_head(self, recorder: _Audited) -> None:
        """heads() gives every session's head, in session order."""
        assert recorder.heads() == {}
        recorder.append("b", turns(2), expected_version=0)
        recorder.append("a", turns(3), expected_version=0)
        heads = recorder.heads()
        assert list(heads) == ["a", "b"]
        assert (heads["a"], heads["b"]) == (recorder.head("a"), recorder.head("b"))

    def test_spill_handles_are_the_recorded_ones(self, recorder: _Audited) -> None:
        """spill_handles names each handle any session recorded, once."""
        one, two = _spilled("ab" * 32), _spilled("cd" * 32)
        recorder.append("a", [one, two], expected_version=0)
        recorder.append("b", [TURN, one], expected_version=0)
        assert sorted(recorder.spill_handles()) == [one.handle, two.handle]

    def test_a_fresh_store_has_no_integrity_problems(self, recorder: _Audited) -> None:
        """The backend's own integrity check passes on a sound database, whose views are
        this release's."""
        recorder.append("s", turns(3), expected_version=0)
        assert recorder.integrity_problems() == []
        assert recorder.view_notes() == []
