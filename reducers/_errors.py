"""The error roots shared by every layer.

They live at the bottom of the import graph so that the pure layers can raise
them without importing the store; ``eventstore`` re-exports them.
"""

from __future__ import annotations


class JournalError(Exception):
    """Root of every error tierlog raises on purpose."""


class InvalidEvent(JournalError, ValueError):
    """Bad input: a malformed event, a range outside the log, an unknown id.

    Nothing is written when it is raised.
    """


class InvalidArgument(JournalError, ValueError):
    """A bad argument that is not an event: a timeout, a version to read at, a file
    that cannot be read, a query, an option. Nothing is written when it is raised."""
