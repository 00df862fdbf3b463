"""The contract of ``EventLog``: appends at an expected version, transactions, reads,
another writer's commits."""

from __future__ import annotations

import hashlib
import json

import pytest

from eventstore import ConcurrencyError, InvalidArgument, InvalidEvent, JournalError
from eventstore._store import GENESIS, EventLog, check_chain, to_payload
from eventstore.testing._another import AnotherWriterContract
from eventstore.testing._samples import TURN, samples, turns
from eventstore.testing._transactions import TransactionsContract
from reducers import Checkpointed

CHAIN_BROKEN = "the stored rows do not walk as one hash chain"


class EventLogContract(TransactionsContract, AnotherWriterContract):
    """What every backend's event log does; the subclass provides ``recorder`` (and
    ``another_recorder``, a second recorder on its journal, if the backend has one)."""

    # -- appending ---------------------------------------------------------------------
    def test_empty_session_head_is_genesis(self, recorder: EventLog) -> None:
        """A session with no events is at version 0 with the genesis hash."""
        assert recorder.head("nobody") == (0, GENESIS)

    def test_batch_versions_are_consecutive(self, recorder: EventLog) -> None:
        """A batch takes the next versions in order, and append returns the last."""
        assert recorder.append("s", [TURN] * 3, expected_version=0) == 3
        assert [row.version for row in recorder.read("s")] == [1, 2, 3]
        assert recorder.head("s")[0] == 3

    def test_an_empty_batch_writes_nothing(self, recorder: EventLog) -> None:
        """Appending no events returns the head's version and creates no session."""
        assert recorder.append("s", [], expected_version=0) == 0
        assert recorder.sessions() == []

    def test_expected_version_mismatch_writes_nothing(self, recorder: EventLog) -> None:
        """A stale expected version is a ConcurrencyError and the batch is not written."""
        recorder.append("s", [TURN], expected_version=0)
        with pytest.raises(ConcurrencyError, match="at version 1, expected 0"):
            recorder.append("s", [TURN, TURN], expected_version=0)
        assert recorder.head("s")[0] == 1

    @pytest.mark.parametrize("version", [-1, 2**63, 4.5, "4", True])
    def test_an_expected_version_that_is_no_version_is_invalid(
        self, recorder: EventLog, version: object
    ) -> None:
        """A negative, too large, fractional, text or boolean expected version is
        InvalidEvent, and nothing is written."""
        recorder.append("s", turns(4), expected_version=0)
        with recorder.transaction():
            head = recorder.head("s")
            with pytest.raises(InvalidEvent, match="expected_version"):
                recorder.append("s", [TURN], expected_version=version, head_hash=head.hash)  # type: ignore[arg-type]
        assert recorder.head("s") == head

    def test_batch_is_atomic(self, recorder: EventLog) -> None:
        """A batch with one bad event writes none of its events."""
        with pytest.raises(InvalidEvent):
            recorder.append("s", [TURN, "not an event", TURN], expected_version=0)  # type: ignore[list-item]
        assert recorder.head("s") == (0, GENESIS)

    @pytest.mark.parametrize(
        "events", [None, 5, {TURN}, {TURN: 1}, TURN], ids=["None", "int", "set", "dict", "event"]
    )
    def test_a_batch_that_is_no_sequence_is_invalid(
        self, recorder: EventLog, events: object
    ) -> None:
        """Events given as no sequence (nothing, a number, a set of no order, a mapping,
        one bare event) are InvalidEvent, and nothing is written."""
        with pytest.raises(InvalidEvent, match="sequence"):
            recorder.append("s", events, expected_version=0)  # type: ignore[arg-type]
        assert recorder.sessions() == []

    @pytest.mark.parametrize("session_id", ["", "../up", "a\x00b", "-x", "x" * 129, 5, None])
    def test_a_session_id_a_journal_cannot_open_is_invalid(
        self, recorder: EventLog, session_id: object
    ) -> None:
        """A session id that ``Journal.session`` would refuse (empty, a path, a NUL, a
        leading dash, 129 characters, no text) is InvalidEvent on append, and nothing is
        written: a stored session is one every tool can open."""
        with pytest.raises(InvalidEvent, match="session id"):
            recorder.append(session_id, [TURN], expected_version=0)  # type: ignore[arg-type]
        assert recorder.sessions() == []

    def test_sessions_are_independent_streams(self, recorder: EventLog) -> None:
        """Versions count per session; sessions() lists each once, sorted."""
        recorder.append("b", [TURN] * 2, expected_version=0)
        recorder.append("a", [TURN], expected_version=0)
        assert recorder.sessions() == ["a", "b"]
        assert (recorder.head("a")[0], recorder.head("b")[0]) == (1, 2)

    def test_hash_chain_matches_an_independent_computation(self, recorder: EventLog) -> None:
        """hash = sha256(prev_hash + canonical JSON of the row), recomputed here by hand."""
        recorder.append("s", [TURN, Checkpointed(at=1)], expected_version=0)
        prev = GENESIS
        for row in recorder.read("s"):
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
        assert recorder.head("s") == (2, prev)

    def test_every_event_type_is_stored_byte_for_byte(self, recorder: EventLog) -> None:
        """Stored and read back, each sample event decodes equal, its payload bytes
        are the canonical encoder's, and the rows walk as one chain."""
        events = samples()
        recorder.append("s", events, expected_version=0)
        rows = list(recorder.read("s"))
        assert [row.payload for row in rows] == [to_payload(event) for event in events]
        assert [row.event for row in rows] == events
        assert [row.type for row in rows] == [type(event).__name__ for event in events]
        assert check_chain(recorder, "s") is None, CHAIN_BROKEN

    # -- reading -----------------------------------------------------------------------
    def test_read_streams_lazily(self, recorder: EventLog) -> None:
        """read() starts where asked and stops where asked; taking one row first works."""
        recorder.append("s", [TURN] * 50, expected_version=0)
        stream = recorder.read("s", start=10)
        first = next(stream)
        assert (first.version, next(stream).version) == (10, 11)
        assert [row.version for row in recorder.read("s", start=48, stop=49)] == [48, 49]
        assert [row.version for row in recorder.read("s", start=51)] == []

    def test_a_read_without_stop_ends_where_the_session_was(self, recorder: EventLog) -> None:
        """Rows appended while a read is under way are not read, and none is skipped:
        the read is every version up to the head it began at."""
        recorder.append("s", turns(3_000), expected_version=0)  # pages of either backend
        rows = recorder.read("s")
        first = next(rows)
        recorder.append("s", turns(3_400)[3_000:], expected_version=3_000)
        assert [first.version, *(row.version for row in rows)] == list(range(1, 3_001))

    @pytest.mark.parametrize(
        ("start", "stop"), [(-1, None), (1, 2**63), ("1", None), (True, None), (1, 1.5)]
    )
    def test_a_read_of_no_range_is_invalid(
        self, recorder: EventLog, start: object, stop: object
    ) -> None:
        """Bounds that are not versions are InvalidArgument, before anything is read."""
        with pytest.raises(InvalidArgument):
            recorder.read("s", start=start, stop=stop)  # type: ignore[arg-type]

    def test_a_closed_store_is_a_journal_error(self, recorder: EventLog) -> None:
        """After close (idempotent), reading and writing are each a JournalError,
        never the driver's own error."""
        recorder.append("s", [TURN], expected_version=0)
        recorder.close()
        recorder.close()
        for use in (
            lambda: recorder.head("s"),
            lambda: list(recorder.read("s")),
            lambda: recorder.append("s", [TURN], expected_version=1),
            lambda: recorder.sessions(),
        ):
            with pytest.raises(JournalError):
                use()

    def test_location_names_the_journal(self, recorder: EventLog) -> None:
        """``location`` is text a message can name the journal by."""
        assert isinstance(recorder.location, str)
        assert recorder.location.strip()
