"""A PostgreSQL journal outlives a server restart: the next call reconnects, and a
transaction the restart cut fails typed, with nothing of it written."""

from __future__ import annotations

import pytest

import eventstore
from eventstore import ConnectionLost
from reducers import TurnAppended
from tests import pgcluster
from tests.helpers import fill, new_session


@pytest.fixture(name="cluster")
def _cluster(restartable: pgcluster.Cluster) -> pgcluster.Cluster:
    return restartable


@pytest.fixture(name="url")
def _url(cluster: pgcluster.Cluster) -> str:
    return cluster.create_schema()


def _versions(url: str) -> list[int]:
    with eventstore.open(url, readonly=True) as journal:
        return [row.version for row in journal.recorder.read("s")]


class TestRestart:
    def test_the_next_commit_reconnects(self, cluster: pgcluster.Cluster, url: str) -> None:
        """After a restart between two commits, the next commit simply succeeds."""
        with eventstore.open(url) as journal:
            s = new_session(journal)
            fill(s, 2)
            cluster.restart()
            s.append_turn("user", "after the restart", 3)
            assert journal.session("s").state.turns == 3
        assert _versions(url) == [1, 2, 3, 4]

    def test_every_kind_of_call_reconnects(self, cluster: pgcluster.Cluster, url: str) -> None:
        """Reads, a query, verify and a new session all work on the same journal object
        after a restart."""
        with eventstore.open(url) as journal:
            fill(new_session(journal), 2)
            for call in (
                lambda: journal.sessions(),
                lambda: list(journal.recorder.query("SELECT count(*) FROM turns", timeout=5).rows),
                lambda: journal.recorder.integrity_problems(),
                lambda: new_session(journal, "t"),
            ):
                cluster.restart()
                call()
            assert journal.sessions() == ["s", "t"]

    def test_a_transaction_cut_by_the_restart_fails_typed(
        self, cluster: pgcluster.Cluster, url: str
    ) -> None:
        """A transaction that had reached the server fails with ConnectionLost and
        writes nothing; the journal works again on the next call."""
        with eventstore.open(url) as journal:
            s = new_session(journal)
            fill(s, 2)
            recorder = journal.recorder

            def cut() -> None:
                with recorder.transaction():
                    recorder.head("s")  # BEGIN, the lock and the head reach the server
                    cluster.restart()
                    recorder.head("other")

            with pytest.raises(ConnectionLost, match="did not commit"):
                cut()
            assert _versions(url) == [1, 2, 3]
            s.append_turn("user", "kept", 1)
        assert _versions(url) == [1, 2, 3, 4]

    def test_a_commit_cut_by_the_restart_fails_typed(
        self, cluster: pgcluster.Cluster, url: str
    ) -> None:
        """A restart between a transaction's reads and its COMMIT: ConnectionLost (the
        client cannot know the COMMIT's fate, and says so); here nothing was written."""
        with eventstore.open(url) as journal:
            s = new_session(journal)
            fill(s, 2)
            recorder = journal.recorder
            turn = TurnAppended(index=2, role="user", content="lost", tokens=1)

            def cut() -> None:
                with recorder.transaction():
                    head = recorder.head("s")
                    recorder.append("s", [turn], expected_version=head.version)
                    cluster.restart()

            with pytest.raises(ConnectionLost, match="at COMMIT"):
                cut()
            assert _versions(url) == [1, 2, 3]
            assert s.state.turns == 2
            s.append_turn("user", "kept", 1)
        assert _versions(url) == [1, 2, 3, 4]

    def test_a_journal_whose_server_is_down_says_so_then_recovers(
        self, cluster: pgcluster.Cluster, url: str
    ) -> None:
        """While the server is down a call fails with ConnectionLost (it cannot
        reconnect); once it is back, the same journal works."""
        with eventstore.open(url) as journal:
            s = new_session(journal)
            cluster.stop_server()
            try:
                with pytest.raises(ConnectionLost):
                    s.append_turn("user", "nobody listens", 1)
                with pytest.raises(ConnectionLost, match="cannot connect"):
                    journal.sessions()
            finally:
                cluster.start_server()
            s.append_turn("user", "back", 1)
        assert _versions(url) == [1, 2]

    def test_a_closed_journal_does_not_reconnect(self, url: str) -> None:
        """close() is final: a call after it is a JournalError, not a new connection."""
        journal = eventstore.open(url)
        journal.close()
        with pytest.raises(eventstore.JournalError, match="closed"):
            journal.sessions()
