"""Spill storage in a server journal's own database: the ``spill_data`` table.

The same store as ``FolderSpills`` (``_spills``), in rows instead of files: the
handle is derived from the bytes' sha256 alone (``<sha256[:2]>/<sha256>.spill``),
so a spill has the same handle, event and state sha256 on both backends, and a row
holds only the bytes after its *base*, the longest earlier spill whose bytes start its
own, unless that chain is ``SPILL_DEPTH`` rows deep already: then the row holds the
whole bytes, so a read follows a bounded number of rows. A row is written in the
transaction of
the event that records it, so a refusal that rolls back leaves no spill behind and
nothing is ever orphaned; rows are immutable (a trigger refuses UPDATE and DELETE).
Every read reassembles the bytes and checks them against the recorded size and
sha256.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import NamedTuple, Protocol

from eventstore._errors import IntegrityError
from eventstore._store import SPILL_DEPTH, handle_for, is_legacy
from reducers import JournalError, Spill, Spilled

MAX_CHAIN = 10_000  # bases followed before a chain is called a loop


class SpillRow(NamedTuple):
    """One stored spill: the bytes after its base (if any)."""

    base: str | None
    base_bytes: int
    data: bytes


class _SpillTable(Protocol):
    @property
    def location(self) -> str: ...
    def write_spill(
        self, handle: str, sha256: str, size: int, base: str | None, base_bytes: int, data: bytes
    ) -> None: ...
    def spill_row(self, handle: str) -> SpillRow | None: ...
    def stored_spills(self) -> list[str]: ...


class TableSpills:
    """The spills of a PostgreSQL journal, in its ``spill_data`` table."""

    orphan_hint = (
        "written by hand: spill rows are immutable, so --clean cannot remove it; the"
        " database's owner may, with spill_data's triggers disabled"
    )

    max_depth = SPILL_DEPTH  # rows in a chain at most (an instance may lower it)

    def __init__(self, table: _SpillTable) -> None:
        self.table = table

    @property
    def location(self) -> str:
        """Where the spills live, for messages."""
        return f"{self.table.location} (table spill_data)"

    # -- write ----------------------------------------------------------------------------
    def write(self, data: bytes, *, lo: int, hi: int, earlier: Iterable[Spill]) -> Spilled:
        """Store ``data`` (the raw range ``[lo, hi)``) in the open transaction; the event
        recording it. The same bytes are stored once; an earlier spill whose bytes
        start ``data`` becomes the base."""
        digest = hashlib.sha256(data).hexdigest()
        spilled = Spilled(lo=lo, hi=hi, handle=handle_for(digest), sha256=digest, bytes=len(data))
        if self.problem(spilled) is None:
            return spilled
        base = self._base(data, lo, earlier)
        cut = base.bytes if base else 0
        self.table.write_spill(
            spilled.handle, digest, len(data), base.handle if base else None, cut, data[cut:]
        )
        return spilled

    def adopt(self, spill: Spill | Spilled, data: bytes, earlier: Iterable[Spill] = ()) -> None:
        """Store bytes recorded elsewhere under their recorded handle (``tierlog ship``);
        IntegrityError if they are not the recorded bytes."""
        if (hashlib.sha256(data).hexdigest(), len(data)) != (spill.sha256, spill.bytes):
            raise IntegrityError(f"spill {spill.handle} does not match its recorded sha256")
        if is_legacy(spill.handle):  # a 0.1 handle: kept as recorded, whole
            self.table.write_spill(spill.handle, spill.sha256, spill.bytes, None, 0, data)
            return
        got = self.write(data, lo=spill.lo, hi=spill.hi, earlier=earlier)
        if got.handle != spill.handle:
            raise IntegrityError(f"spill {spill.handle} is not named after its sha256")

    def _base(self, data: bytes, lo: int, earlier: Iterable[Spill]) -> Spill | None:
        """The longest earlier spill from ``lo`` whose bytes start ``data`` and still read
        back, if any, unless its chain is ``max_depth`` rows deep."""
        candidates = [
            s for s in earlier if s.lo == lo and 0 < s.bytes < len(data) and not is_legacy(s.handle)
        ]
        if not candidates:
            return None
        best = max(candidates, key=lambda s: (s.bytes, s.version))
        if hashlib.sha256(data[: best.bytes]).hexdigest() != best.sha256:
            return None
        try:
            depth = len(self._checked(best))
        except IntegrityError:
            return None
        return best if depth < self.max_depth else None

    # -- read back and check ------------------------------------------------------------
    def read(self, spill: Spill | Spilled) -> bytes:
        """The spill's bytes, checked against its recorded size and sha256."""
        return b"".join(self._checked(spill))

    def _checked(self, spill: Spill | Spilled) -> list[bytes]:
        """The bytes of each row of the spill's chain, first row first, checked together
        against its recorded size and sha256."""
        parts = self._assemble(spill.handle)
        data = b"".join(parts)
        if len(data) != spill.bytes:
            raise IntegrityError(
                f"spill {spill.handle} has {len(data)} bytes, {spill.bytes} recorded"
            )
        if hashlib.sha256(data).hexdigest() != spill.sha256:
            raise IntegrityError(f"spill {spill.handle} does not match its recorded sha256")
        return parts

    def _assemble(self, handle: str) -> list[bytes]:
        """The bytes of the row and of its bases, first base first (IntegrityError if
        one is missing)."""
        parts: list[bytes] = []
        cur: str | None = handle
        for _ in range(MAX_CHAIN):
            if cur is None:
                return parts[::-1]
            row = self.table.spill_row(cur)
            if row is None:
                raise IntegrityError(f"spill {cur} is missing from {self.location}")
            parts.append(row.data)
            cur = row.base
        raise IntegrityError(f"spill {handle}: its bases loop")

    def problem(self, spill: Spill | Spilled) -> str | None:
        """Why the spill does not read back as its recorded bytes, or ``None``."""
        try:
            self.read(spill)
        except IntegrityError as exc:
            return str(exc)
        return None

    def checker(self) -> Callable[[Spill | Spilled], str | None]:
        """``problem`` for one pass over many spills: each handle checked once."""
        seen: dict[tuple[str, str, int], str | None] = {}

        def check(spill: Spill | Spilled) -> str | None:
            key = (spill.handle, spill.sha256, spill.bytes)
            if key not in seen:
                seen[key] = self.problem(spill)
            return seen[key]

        return check

    # -- orphans ------------------------------------------------------------------------
    def orphans(self, handles: Iterable[str]) -> list[str]:
        """Rows no recorded handle (nor a base of one) uses: none, unless written by
        hand (a spill is written in its event's transaction)."""
        reached: set[str] = set()
        for handle in handles:
            cur: str | None = handle
            while cur is not None and cur not in reached:
                reached.add(cur)
                row = self.table.spill_row(cur)
                cur = row.base if row else None
        return sorted(set(self.table.stored_spills()) - reached)

    def remove(self, names: Iterable[str]) -> None:
        """Rows are immutable: only an empty list is accepted."""
        if list(names):
            raise JournalError(
                f"spill rows in {self.location} are immutable: remove them as the database's"
                " owner if you must"
            )
