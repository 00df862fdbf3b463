"""The contract of a second writer: two recorders on one journal, as two processes are.

A backend whose journal can be opened twice provides a fixture named
``another_recorder``: a second recorder on the journal of ``recorder`` (and closes it
afterwards). Without it these tests skip: a backend in one process's memory has no
other writer. Each test lets one recorder write while the other holds no transaction,
so a backend that locks (SQLite's file, PostgreSQL's advisory lock) never waits.

The tests ask for the fixture by name when they run: a default fixture of the same
name here could win over the subclass's, depending on the method names pytest meets
first.
"""

from __future__ import annotations

from typing import Protocol

import pytest

from eventstore import ConcurrencyError
from eventstore._store import EventLog, ReplayReads, check_chain
from eventstore.testing._samples import TURN, turns

CHAIN_BROKEN = "the stored rows do not walk as one hash chain"


class _Replayed(EventLog, ReplayReads, Protocol):
    """A log with its fast reads."""


def another_recorder(request: pytest.FixtureRequest) -> EventLog:
    """The subclass's ``another_recorder`` fixture; without one, the test skips."""
    try:
        another: EventLog = request.getfixturevalue("another_recorder")
    except pytest.FixtureLookupError:
        pytest.skip("no another_recorder fixture: the tests of a second writer skip")
    return another


class AnotherWriterContract:
    """What a recorder sees of another writer's commits (part of ``EventLogContract``)."""

    def test_another_writers_commit_moves_the_head(
        self, recorder: EventLog, request: pytest.FixtureRequest
    ) -> None:
        """The head another writer committed is the head, read outside a transaction
        or under one's lock; an append links to it, and a writer that expected the
        head before it is a ConcurrencyError."""
        another = another_recorder(request)
        recorder.append("s", [TURN], expected_version=0)
        assert another.head("s") == recorder.head("s")
        another.append("s", turns(2), expected_version=1)
        assert recorder.head("s") == another.head("s")
        assert recorder.head("s")[0] == 3
        with recorder.transaction():
            assert recorder.head("s") == another.head("s")
            assert recorder.append("s", [TURN], expected_version=3) == 4
        with pytest.raises(ConcurrencyError, match="at version 4, expected 3"):
            another.append("s", [TURN], expected_version=3)
        assert another.head("s") == recorder.head("s")
        assert check_chain(another, "s") is None, CHAIN_BROKEN

    def test_another_writers_rows_are_read(
        self, recorder: EventLog, request: pytest.FixtureRequest
    ) -> None:
        """Sessions and rows another writer committed are listed and read, in order."""
        another = another_recorder(request)
        recorder.append("a", turns(2), expected_version=0)
        assert recorder.sessions() == ["a"]
        another.append("b", [TURN], expected_version=0)
        another.append("a", turns(3)[2:], expected_version=2)
        assert recorder.sessions() == ["a", "b"]
        assert [row.version for row in recorder.read("a")] == [1, 2, 3]
        assert [tuple(r) for r in recorder.read("a")] == [tuple(r) for r in another.read("a")]


class AnotherReaderContract:
    """What replay reads of another writer's commits (part of ``ReplayReadsContract``)."""

    def test_replay_reads_see_another_writers_rows(
        self, recorder: _Replayed, request: pytest.FixtureRequest
    ) -> None:
        """Payloads, turns and hashes another writer committed are read back."""
        another = another_recorder(request)
        recorder.append("s", turns(2), expected_version=0)
        assert len(list(recorder.read_payloads("s"))) == 2
        another.append("s", turns(4)[2:], expected_version=2)
        rows = list(another.read("s"))
        assert list(recorder.read_payloads("s")) == [(r.type, r.payload) for r in rows]
        assert list(recorder.turn_payloads("s", 3, 4)) == [r.payload for r in rows[2:]]
        assert recorder.hash_at("s", 4) == rows[-1].hash
