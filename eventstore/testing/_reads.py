"""The contracts of ``ReplayReads`` (the fast reads) and ``SnapshotStore`` (the cache's bytes)."""

from __future__ import annotations

import contextlib
import json
from typing import Protocol

import pytest

from eventstore import InvalidArgument
from eventstore._store import EventLog, ReplayReads, SnapshotStore
from eventstore.testing._another import AnotherReaderContract
from eventstore.testing._samples import TURN, turns
from reducers import CallOpened, Checkpointed


class _Replayed(EventLog, ReplayReads, Protocol):
    """A log with its fast reads (what the replay tests write, then read)."""


class _Cached(EventLog, SnapshotStore, Protocol):
    """A log with its snapshot cache (transactions, and the cache's bytes)."""


class ReplayReadsContract(AnotherReaderContract):
    """What replay and decisions read fast; the subclass provides ``recorder`` (and
    ``another_recorder``, if the backend has one)."""

    def test_read_payloads_match_read(self, recorder: _Replayed) -> None:
        """The replay hot path yields the same (type, payload) as the full rows."""
        recorder.append("s", [*turns(3), Checkpointed(at=3)], expected_version=0)
        full = [(row.type, row.payload) for row in recorder.read("s", start=2)]
        assert list(recorder.read_payloads("s", start=2)) == full
        assert list(recorder.read_payloads("s", start=2, stop=3)) == full[:2]
        assert list(recorder.read_payloads("nobody")) == []

    def test_read_payloads_without_stop_end_where_the_session_was(
        self, recorder: _Replayed
    ) -> None:
        """Payloads appended while a replay is under way are not read, none is skipped."""
        recorder.append("s", turns(3_000), expected_version=0)
        payloads = recorder.read_payloads("s")
        first = next(payloads)
        recorder.append("s", turns(3_400)[3_000:], expected_version=3_000)
        rows = recorder.read("s", stop=3_000)
        assert [first, *payloads] == [(row.type, row.payload) for row in rows]

    @pytest.mark.parametrize(
        ("start", "stop"), [(-1, None), (1, 2**63), ("1", None), (True, None), (1, 1.5)]
    )
    def test_a_payload_read_of_no_range_is_invalid(
        self, recorder: _Replayed, start: object, stop: object
    ) -> None:
        """Bounds that are not versions are InvalidArgument, before anything is read."""
        with pytest.raises(InvalidArgument):
            recorder.read_payloads("s", start=start, stop=stop)  # type: ignore[arg-type]

    def test_turn_payloads_skip_other_events(self, recorder: _Replayed) -> None:
        """turn_payloads reads only the turns between two versions, in version order
        (past nine, and past a page, too)."""
        call = CallOpened(call_id="c", kind="tool_call", name="x")
        recorder.append("s", [*turns(2), call, *turns(3)[2:]], expected_version=0)
        contents = [json.loads(p)["content"] for p in recorder.turn_payloads("s", 1, 4)]
        assert contents == ["t0", "t1", "t2"]
        assert [json.loads(p)["content"] for p in recorder.turn_payloads("s", 2, 3)] == ["t1"]
        recorder.append("s", turns(3_000)[3:], expected_version=4)
        contents = [json.loads(p)["content"] for p in recorder.turn_payloads("s", 1, 3_001)]
        assert contents == [f"t{i}" for i in range(3_000)]

    def test_read_payloads_come_in_version_order(self, recorder: _Replayed) -> None:
        """From any start, payloads come in version order, as ``read`` gives the rows
        (past nine and past a page: no order by text, by hash or by arrival)."""
        recorder.append("s", turns(3_000), expected_version=0)
        for start, stop in [(1, None), (8, 12), (95, 2_100)]:
            rows = recorder.read("s", start=start, stop=stop)
            assert list(recorder.read_payloads("s", start=start, stop=stop)) == [
                (row.type, row.payload) for row in rows
            ]

    def test_hash_at_is_the_hash_of_that_version(self, recorder: _Replayed) -> None:
        """hash_at gives the stored hash at any version, and None where there is none."""
        recorder.append("a", turns(3), expected_version=0)
        hashes = [row.hash for row in recorder.read("a")]
        assert [recorder.hash_at("a", v) for v in (1, 2, 3)] == hashes
        assert recorder.hash_at("a", 3) == recorder.head("a").hash
        assert (recorder.hash_at("a", 4), recorder.hash_at("a", 0)) == (None, None)
        assert recorder.hash_at("b", 1) is None


class SnapshotStoreContract:
    """What the snapshot cache keeps; the subclass provides ``recorder``."""

    def test_snapshot_round_trip_replaces_changed_chunks(self, recorder: _Cached) -> None:
        """A saved snapshot loads back; a later save replaces header and changed chunks."""
        assert recorder.load_snapshot("s") is None
        with recorder.transaction():
            recorder.save_snapshot(
                "s", 5, "a" * 64, b"head-5", [("tok", 0, b"c0"), ("tok", 1, b"c1")]
            )
        with recorder.transaction():
            recorder.save_snapshot("s", 9, "b" * 64, b"head-9", [("tok", 1, b"c1'")])
        snap = recorder.load_snapshot("s")
        assert snap is not None
        assert (snap.version, snap.sha256, snap.header) == (9, "b" * 64, b"head-9")
        assert list(snap.chunks) == [("tok", b"c0"), ("tok", b"c1'")]

    def test_replace_drops_every_old_chunk(self, recorder: _Cached) -> None:
        """With ``replace`` the old chunks are gone, and chunks come back in
        (ledger, chunk) order whatever the order they were saved in."""
        with recorder.transaction():
            recorder.save_snapshot("s", 5, "a" * 64, b"h5", [("b", 0, b"b0"), ("a", 3, b"a3")])
            recorder.save_snapshot(
                "s", 7, "c" * 64, b"h7", [("b", 1, b"b1"), ("a", 2, b"a2")], replace=True
            )
        snap = recorder.load_snapshot("s")
        assert snap is not None
        assert (snap.version, list(snap.chunks)) == (7, [("a", b"a2"), ("b", b"b1")])

    def test_a_snapshot_saved_outside_a_transaction_is_kept(self, recorder: _Cached) -> None:
        """Saved with no transaction open, a snapshot commits in one of its own."""
        recorder.save_snapshot("s", 3, "d" * 64, b"h3", [("tok", 0, b"x")])
        snap = recorder.load_snapshot("s")
        assert snap is not None
        assert (snap.version, snap.header, list(snap.chunks)) == (3, b"h3", [("tok", b"x")])

    def test_a_snapshot_rolls_back_with_its_transaction(self, recorder: _Cached) -> None:
        """A snapshot saved in a transaction that rolls back is not kept, and the one
        before it is."""
        recorder.save_snapshot("s", 3, "d" * 64, b"h3", [("tok", 0, b"x")])
        with contextlib.suppress(RuntimeError), recorder.transaction():
            recorder.append("s", [TURN], expected_version=0)
            recorder.save_snapshot("s", 4, "e" * 64, b"h4", [("tok", 0, b"y")], replace=True)
            raise RuntimeError("the commit failed")
        snap = recorder.load_snapshot("s")
        assert snap is not None
        assert (snap.version, snap.header, list(snap.chunks)) == (3, b"h3", [("tok", b"x")])

    def test_a_snapshot_rolls_back_with_its_savepoint(self, recorder: _Cached) -> None:
        """A snapshot saved in a nested block that fails is not kept, while the
        transaction around it commits its own."""
        with recorder.transaction():
            recorder.save_snapshot("a", 3, "d" * 64, b"h3", [("tok", 0, b"x")])
            with contextlib.suppress(RuntimeError), recorder.transaction():
                recorder.save_snapshot("a", 4, "e" * 64, b"h4", [("tok", 0, b"y")], replace=True)
                recorder.save_snapshot("b", 1, "f" * 64, b"hb", [("tok", 0, b"b")])
                raise RuntimeError("the command failed after its snapshot")
        snap = recorder.load_snapshot("a")
        assert snap is not None
        assert (snap.version, snap.header, list(snap.chunks)) == (3, b"h3", [("tok", b"x")])
        assert recorder.load_snapshot("b") is None

    def test_snapshots_are_per_session(self, recorder: _Cached) -> None:
        """Each session has its own snapshot; replacing one leaves the others."""
        with recorder.transaction():
            recorder.save_snapshot("a", 1, "a" * 64, b"ha", [("tok", 0, b"a")])
            recorder.save_snapshot("b", 2, "b" * 64, b"hb", [("tok", 0, b"b")], replace=True)
        a, b = recorder.load_snapshot("a"), recorder.load_snapshot("b")
        assert a is not None
        assert b is not None
        assert (a.header, list(a.chunks)) == (b"ha", [("tok", b"a")])
        assert (b.header, list(b.chunks)) == (b"hb", [("tok", b"b")])
