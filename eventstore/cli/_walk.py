"""``tierlog log``'s rows: every stored row shown, and the first that breaks the chain named.

A person reading a tampered session's log wants to see the rows, the bad one
included; so the rows are handed on as stored, each checked to link to the one
before it, and the first break is kept for the command to report (exit 1).
"""

from __future__ import annotations

from collections.abc import Iterator

from eventstore._errors import ChainBroken, UnreadableRow
from eventstore._journal import Journal
from eventstore._store import GENESIS, Head, Links, Recorded


class CheckedRows:
    """Rows ``start..stop`` of a session as stored; ``broken`` is where the chain first
    breaks among them (or just before them), else ``None``."""

    def __init__(self, journal: Journal, session_id: str, start: int, stop: int | None) -> None:
        self.journal, self.session_id = journal, session_id
        self.start, self.stop = start, stop
        self.broken: ChainBroken | None = None

    def __iter__(self) -> Iterator[Recorded]:
        head = self._row_before()
        rows = self.journal.recorder.read(self.session_id, start=self.start, stop=self.stop)
        try:
            for row in rows:
                if self.broken is None:
                    self._check(row, head)
                head = Head(row.version, row.hash)
                yield row
        except UnreadableRow as exc:
            self.broken = self.broken or ChainBroken(
                self.session_id, exc.version, "a stored text is not UTF-8"
            )

    def _row_before(self) -> Head:
        if self.start <= 1:
            return Head(0, GENESIS)
        digest = self.journal.recorder.hash_at(self.session_id, self.start - 1)
        if digest is None:
            self.broken = ChainBroken(self.session_id, self.start - 1, "the row is missing")
            return Head(self.start - 1, GENESIS)
        return Head(self.start - 1, digest)

    def _check(self, row: Recorded, head: Head) -> None:
        try:
            for _ in Links(self.session_id, [row], head):
                pass
        except ChainBroken as exc:
            self.broken = exc


def checked_rows(journal: Journal, session_id: str, start: int, stop: int | None) -> CheckedRows:
    """The rows ``tierlog log`` prints, checked on the way (see :class:`CheckedRows`)."""
    return CheckedRows(journal, session_id, start, stop)
