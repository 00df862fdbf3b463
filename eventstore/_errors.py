"""Errors the store raises itself; the rest come from the pure layers."""

from __future__ import annotations

import sys

from reducers import JournalError


class ConcurrencyError(JournalError):
    """Another writer got there first (or held the lock too long): re-read and retry."""


class ConnectionLost(JournalError):
    """The connection to a server journal broke (a restart, a network cut): the
    transaction in flight did not commit (at COMMIT itself, it may have: the message
    says so). The journal reconnects on its next call; re-read and retry."""


class IntegrityError(JournalError):
    """The stored log was tampered with: a broken hash chain or a bad payload."""


class ChainBroken(IntegrityError):
    """A session's hash chain breaks at ``version``, where a reader walked over it: a
    row there was edited, deleted, inserted or reordered behind tierlog's back."""

    def __init__(self, session_id: str, version: int, problem: str) -> None:
        super().__init__(
            f"session {session_id!r} does not verify: its hash chain breaks at v{version}"
            f" ({problem}); see tierlog verify"
        )
        self.session_id = session_id
        self.version = version
        self.problem = problem


class UnreadableRow(IntegrityError):
    """A stored row the database cannot hand over: text that is not UTF-8, written
    behind tierlog's back. ``version`` is the row's."""

    def __init__(self, session_id: str, version: int) -> None:
        super().__init__(
            f"session {session_id!r} v{version}: a stored text is not UTF-8 (edited by hand?)"
        )
        self.version = version


def is_corruption(exc: BaseException) -> bool:  # sqlite3 is a backend's: never imported here
    """Whether SQLite found the file damaged (a malformed page, a torn header)."""
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_CORRUPT"


def is_database_fault(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite failing (I/O, lock, full disk, corruption), not misuse."""
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is None:  # nothing opened SQLite, so nothing it raised
        return False
    faults = (sqlite3.OperationalError, sqlite3.DataError, sqlite3.IntegrityError)
    return isinstance(exc, faults) or type(exc) is sqlite3.DatabaseError
