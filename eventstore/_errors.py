"""Errors the store raises itself; the rest come from the pure layers."""

from __future__ import annotations

from reducers import JournalError


class ConcurrencyError(JournalError):
    """Another writer got there first (or held the lock too long): re-read and retry."""


class IntegrityError(JournalError):
    """The stored log was tampered with: a broken hash chain or a bad payload."""
