"""The contract of ``EventLog``'s transactions: rollbacks, savepoints, held heads, undo."""

from __future__ import annotations

import contextlib

import pytest

from eventstore import ConcurrencyError, JournalError
from eventstore._store import GENESIS, AppendPath, EventLog, check_chain, link_rows
from eventstore.testing._samples import TURN, turns

CHAIN_BROKEN = "the stored rows do not walk as one hash chain"


class TransactionsContract:
    """What every backend's transactions do (part of ``EventLogContract``); the
    subclass provides ``recorder``."""

    def test_rollback_on_error_inside_transaction(self, recorder: EventLog) -> None:
        """An exception after the insert, inside the transaction, rolls the insert back."""

        def decide_then_fail() -> None:
            with recorder.transaction():
                recorder.append("s", [TURN, TURN], expected_version=0)
                raise RuntimeError("decision failed after the insert")

        with pytest.raises(RuntimeError):
            decide_then_fail()
        assert recorder.head("s") == (0, GENESIS)
        assert recorder.sessions() == []

    def test_nested_transaction_rolls_back_only_itself(self, recorder: EventLog) -> None:
        """An error in a nested block undoes that block; the outer one still commits."""

        def inner() -> None:
            with recorder.transaction():
                recorder.append("b", [TURN], expected_version=0)
                raise RuntimeError("inner")

        with recorder.transaction():
            recorder.append("a", [TURN], expected_version=0)
            with pytest.raises(RuntimeError):
                inner()
            assert recorder.head("b")[0] == 0
        assert (recorder.head("a")[0], recorder.head("b")[0]) == (1, 0)

    def test_blocks_made_before_they_are_entered_nest(self, recorder: EventLog) -> None:
        """Blocks taken from ``transaction()`` up front and entered three deep act by
        the depth they are entered at: the innermost rolls back alone, the middle one
        keeps its write, the outermost commits both; entered again, the outermost is a
        transaction again."""
        outer, middle, inner = (recorder.transaction() for _ in range(3))
        with outer:
            recorder.append("a", [TURN], expected_version=0)
            with middle:
                recorder.append("b", [TURN], expected_version=0)
                with contextlib.suppress(RuntimeError), inner:
                    recorder.append("c", [TURN], expected_version=0)
                    raise RuntimeError("innermost")
                recorder.append("b", [TURN], expected_version=1)
        assert [recorder.head(s)[0] for s in "abc"] == [1, 2, 0]
        with contextlib.suppress(RuntimeError), outer:
            recorder.append("a", [TURN], expected_version=1)
            raise RuntimeError("outermost")
        assert recorder.head("a")[0] == 1

    def test_a_head_read_in_a_transaction_follows_its_appends(self, recorder: EventLog) -> None:
        """Inside a transaction the head is the one its own appends made, and after a
        savepoint rolls back, the one before that savepoint."""
        recorder.append("s", turns(2), expected_version=0)
        with recorder.transaction():
            assert recorder.head("s")[0] == 2
            assert recorder.append("s", [TURN], expected_version=2) == 3
            third = next(recorder.read("s", start=3))
            assert recorder.head("s") == (3, third.hash)
            with contextlib.suppress(RuntimeError), recorder.transaction():
                recorder.append("s", [TURN], expected_version=3)
                raise RuntimeError("savepoint")
            assert recorder.head("s") == (3, third.hash)
        assert [row.version for row in recorder.read("s")] == [1, 2, 3]
        assert recorder.head("s") == (3, third.hash)

    def test_a_callers_head_is_checked_never_trusted(self, recorder: EventLog) -> None:
        """Inside a transaction, ``head_hash`` and ``expected_version`` are checked
        against the head read under the lock: a hash of another head, a head read
        before the transaction, or one a rolled-back savepoint wrote is a
        ConcurrencyError, and nothing is written."""
        recorder.append("s", turns(4), expected_version=0)
        recorder.append("t", turns(2), expected_version=0)
        before = recorder.head("s")

        def inner() -> None:
            with recorder.transaction():
                recorder.append("s", [TURN], expected_version=4)
                raise RuntimeError("inner")

        with recorder.transaction():
            head = recorder.head("s")
            for version, stale in [
                (4, "f" * 64),  # no head's hash
                (4, recorder.head("t").hash),  # another session's
                (9, head.hash),  # a version beyond the head
            ]:
                with pytest.raises(ConcurrencyError):
                    recorder.append("s", [TURN], expected_version=version, head_hash=stale)
            with pytest.raises(RuntimeError):
                inner()
            with pytest.raises(ConcurrencyError):
                recorder.append("s", [TURN], expected_version=5, head_hash="0" * 64)
        with recorder.transaction():  # a head read before the transaction is checked too
            assert recorder.append("s", [TURN], expected_version=4, head_hash=before.hash) == 5
        assert [r.version for r in recorder.read("s")] == [1, 2, 3, 4, 5]
        assert check_chain(recorder, "s") is None, CHAIN_BROKEN

    def test_a_head_hash_outside_a_transaction_is_refused(self, recorder: EventLog) -> None:
        """A head can only be handed back inside the transaction that read it."""
        head = recorder.head("s")
        with pytest.raises(JournalError, match="head_hash"):
            recorder.append("s", [TURN], expected_version=0, head_hash=head.hash)
        assert recorder.sessions() == []

    def test_undo_runs_on_rollback_only(self, recorder: EventLog) -> None:
        """on_rollback steps run when the transaction (or its savepoint) rolls back, in
        reverse order, and never after a commit or outside a transaction."""
        ran: list[str] = []
        recorder.on_rollback(lambda: ran.append("outside"))
        with recorder.transaction():
            recorder.on_rollback(lambda: ran.append("committed"))
        with contextlib.suppress(RuntimeError), recorder.transaction():
            recorder.on_rollback(lambda: ran.append("outer"))
            with recorder.transaction():
                recorder.on_rollback(lambda: ran.append("inner"))
            raise RuntimeError("after the savepoint was released")
        with recorder.transaction(), contextlib.suppress(RuntimeError), recorder.transaction():
            recorder.on_rollback(lambda: ran.append("savepoint"))
            raise RuntimeError("inside the savepoint")
        assert ran == ["inner", "outer", "savepoint"]

    def test_a_released_savepoint_commits_with_its_transaction(self, recorder: EventLog) -> None:
        """A nested block that ends without an error keeps its writes: they are read
        inside the transaction, and committed with it."""
        with recorder.transaction():
            recorder.append("a", [TURN], expected_version=0)
            with recorder.transaction():
                recorder.append("b", turns(2), expected_version=0)
                recorder.append("a", [TURN], expected_version=1)
            assert (recorder.head("a")[0], recorder.head("b")[0]) == (2, 2)
            recorder.append("a", [TURN], expected_version=2)
        assert (recorder.head("a")[0], recorder.head("b")[0]) == (3, 2)
        assert check_chain(recorder, "a") is None, CHAIN_BROKEN

    def test_savepoints_nest(self, recorder: EventLog) -> None:
        """Savepoints inside savepoints each undo only their own writes: the innermost
        one failing leaves the one around it, whose later failure undoes the rest."""

        def middle(fail: bool) -> None:
            with recorder.transaction():
                recorder.append("m", [TURN], expected_version=recorder.head("m").version)
                with contextlib.suppress(RuntimeError), recorder.transaction():
                    recorder.append("i", [TURN], expected_version=0)
                    raise RuntimeError("innermost")
                assert recorder.head("i") == (0, GENESIS)
                recorder.append("m", [TURN], expected_version=recorder.head("m").version)
                if fail:
                    raise RuntimeError("middle")

        with recorder.transaction():
            recorder.append("o", [TURN], expected_version=0)
            middle(fail=False)
            with contextlib.suppress(RuntimeError):
                middle(fail=True)
            recorder.append("o", [TURN], expected_version=1)
        heads = [recorder.head(sid)[0] for sid in ("o", "m", "i")]
        assert heads == [2, 2, 0]
        assert recorder.sessions() == ["m", "o"]

    def test_a_failing_undo_step_still_rolls_its_block_back(self, recorder: EventLog) -> None:
        """An undo step that raises stops neither the other steps nor the rollback: a
        failed savepoint's writes are gone when the transaction around it commits, a
        failed transaction's are gone, and the step's error is raised."""
        ran: list[str] = []

        def broken() -> None:
            raise OSError("the spill file could not be removed")

        def failing_block(session_id: str) -> None:
            with recorder.transaction():
                recorder.on_rollback(lambda: ran.append(session_id))
                recorder.on_rollback(broken)
                recorder.append(session_id, [TURN], expected_version=0)
                raise RuntimeError("the decision failed")

        with recorder.transaction():
            recorder.append("a", [TURN], expected_version=0)
            with pytest.raises(OSError):
                failing_block("savepoint")
        with pytest.raises(OSError):
            failing_block("transaction")
        assert ran == ["savepoint", "transaction"]
        assert recorder.sessions() == ["a"]
        recorder.append("a", [TURN], expected_version=1)  # the store is usable after both
        assert recorder.head("a")[0] == 2

    def test_insert_refuses_a_version_already_stored(self, recorder: EventLog) -> None:
        """An ``AppendPath`` backend's ``insert`` refuses a row at a version the session
        holds (a writer that bypassed the lock) with ConcurrencyError, and writes
        nothing of its batch: the schema's unique key, not the lock, is the last word."""
        if not isinstance(recorder, AppendPath):
            pytest.skip("not an AppendPath: its insert hook is its own business")
        recorder.append("s", turns(2), expected_version=0)
        first = next(recorder.read("s"))
        forked = link_rows("s", 1, first.hash, [TURN, TURN], first.recorded_at)  # v2, v3
        stored = [tuple(row) for row in recorder.read("s")]
        with pytest.raises(ConcurrencyError), recorder.transaction():
            recorder.insert(forked)
        assert [tuple(row) for row in recorder.read("s")] == stored
        assert check_chain(recorder, "s") is None, CHAIN_BROKEN
