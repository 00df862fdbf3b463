"""Errors the store raises itself; the rest come from the pure layers."""

from __future__ import annotations

from reducers import JournalError


class ConcurrencyError(JournalError):
    """Another writer got there first (or held the lock too long): re-read and retry."""


class IntegrityError(JournalError):
    """The stored log was tampered with: a broken hash chain or a bad payload."""


class UnreadableRow(IntegrityError):
    """A stored row the database cannot hand over: text that is not UTF-8, written
    behind tierlog's back. ``version`` is the row's."""

    def __init__(self, session_id: str, version: int) -> None:
        super().__init__(
            f"session {session_id!r} v{version}: a stored text is not UTF-8 (edited by hand?)"
        )
        self.version = version
