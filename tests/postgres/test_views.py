"""verify checks each audit view on PostgreSQL against tierlog's definition, as the
server itself renders it, and reports one that is missing."""

from __future__ import annotations

import pytest

import eventstore
from eventstore._ops import verify
from tests.helpers import fill, new_session
from tests.targets import PostgresTarget


@pytest.fixture(name="pg")
def _pg(pg_url: str) -> PostgresTarget:
    with eventstore.open(pg_url) as journal:
        fill(new_session(journal), 3)
    return PostgresTarget(pg_url)


def _problems(pg: PostgresTarget) -> list[str]:
    with eventstore.open(pg.location, readonly=True) as journal:
        return [f.problem for f in verify(journal) if f.check == "integrity"]


class TestViews:
    def test_tierlogs_views_verify(self, pg: PostgresTarget) -> None:
        """A journal as tierlog made it has no view finding, and the check leaves no
        temporary view behind (it is rolled back)."""
        assert _problems(pg) == []
        assert pg.rows("SELECT count(*) FROM pg_class WHERE relname LIKE 'tierlog_expected%'") == [
            (0,)
        ]

    @pytest.mark.parametrize(
        "change",
        [
            "CREATE OR REPLACE VIEW compaction_refusals AS SELECT * FROM compaction_refusals"
            " WHERE version < 0",
            "CREATE OR REPLACE VIEW turns AS SELECT session_id, version, seq, recorded_at,"
            " 0::bigint AS turn_index, ''::text AS role, ''::text AS content, 0::bigint AS tokens"
            " FROM events WHERE type = 'TurnAppended'",
        ],
        ids=["refusals hidden", "turns blanked"],
    )
    def test_a_replaced_view_is_a_finding(self, pg: PostgresTarget, change: str) -> None:
        """A view replaced with other SQL (same columns) is an integrity finding."""
        pg.tamper(change)
        (problem,) = _problems(pg)
        assert problem.startswith("view ")
        assert "was changed (it is not tierlog's)" in problem

    def test_a_dropped_view_is_a_finding(self, pg: PostgresTarget) -> None:
        """A view every journal has, dropped, is reported missing."""
        pg.tamper("DROP VIEW obligations")
        assert _problems(pg) == [
            "view obligations is missing (dropped?): audits that read it fail until a writer"
            " opens the journal and creates it again"
        ]

    def test_row_security_on_the_log_is_a_finding(self, pg: PostgresTarget) -> None:
        """Row-level security on events (a policy can hide the refusals from every audit
        query while leaving the chain walk whole) is an integrity finding naming it."""
        pg.tamper(
            "ALTER TABLE events ENABLE ROW LEVEL SECURITY;"
            " CREATE POLICY quiet ON events USING (type <> 'CompactionRefused'"
            " OR current_query() !~* 'refus|fetch')"
        )
        (problem,) = _problems(pg)
        assert problem.startswith("row-level security is enabled on events (policy quiet)")
