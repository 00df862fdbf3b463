"""An append-only sequence that is persistent without copying.

A :class:`Ledger` is a view of the first ``n`` items of a buffer shared by every
ledger derived from it. ``append`` extends the buffer in place when this view
is its tip (an older view still sees only its own ``n`` items, so nothing a
caller holds changes) and copies the prefix only when a view branches. This is
what lets ``reducers.apply`` be pure and still O(1) per event on a session with
a million turns.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from array import array
from collections.abc import Callable, Iterator, MutableSequence, Sequence
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class _Buffer:
    """The shared items (a list, or an int64 array), an optional index, a lock."""

    __slots__ = ("claimed", "index", "indexed", "items", "lock")

    def __init__(self, items: MutableSequence[Any], indexed: bool) -> None:
        self.items = items
        self.indexed = indexed
        self.index: dict[Any, int] | None = None  # built on first need (see build_index)
        self.lock = threading.Lock()
        self.claimed = False

    def build_index(self) -> dict[Any, int] | None:
        """The index of an indexed buffer, built now if it was not (call with ``lock``
        held): each item's first position. Built before a writer claims the buffer, so
        unlocked appends always find it; a snapshot's ledger that is only read never
        pays for it."""
        if self.indexed and self.index is None:
            items = self.items  # the earliest assignment is the last made
            self.index = dict(zip(reversed(items), range(len(items) - 1, -1, -1), strict=True))
        return self.index


class _Deferred(_Buffer):
    """A buffer whose items a pure ``load`` makes when they are first read (a snapshot's
    call ids: checked when read back, split into strings only if someone needs them)."""

    __slots__ = ("load", "loading")

    def __init__(self, load: Callable[[], list[Any]], indexed: bool) -> None:
        super().__init__([], indexed)
        self.load: Callable[[], list[Any]] | None = load
        self.loading = threading.Lock()  # its own: readers of items may hold ``lock``

    @property
    def items(self) -> MutableSequence[Any]:
        if self.load is not None:
            with self.loading:
                if self.load is not None:
                    _ITEMS.__set__(self, self.load())
                    self.load = None
        items: MutableSequence[Any] = _ITEMS.__get__(self)
        return items

    @items.setter
    def items(self, value: MutableSequence[Any]) -> None:
        _ITEMS.__set__(self, value)


_ITEMS: Any = _Buffer.__dict__["items"]  # the slot itself, under _Deferred's property


class Ledger(Generic[T]):
    """The first ``len(self)`` items of a shared append-only buffer."""

    __slots__ = ("_buf", "_n")

    def __init__(self, buf: _Buffer, n: int) -> None:
        self._buf = buf
        self._n = n

    @classmethod
    def of(cls, items: list[T], *, indexed: bool = False) -> Ledger[T]:
        """A ledger over ``items`` (taken over, not copied); ``indexed`` makes ``in`` O(1)."""
        return cls(_Buffer(items, indexed), len(items))

    @classmethod
    def deferred(cls, n: int, load: Callable[[], list[T]], *, indexed: bool = False) -> Ledger[T]:
        """A ledger of the ``n`` items that ``load`` returns, called when they are first
        read (``len`` does not read them); ``load`` must be pure and return ``n`` items."""
        return cls(_Deferred(load, indexed), n)

    @staticmethod
    def of_ints(items: array[int]) -> Ledger[int]:
        """A compact ledger of 64-bit integers (taken over, not copied)."""
        return Ledger(_Buffer(items, indexed=False), len(items))

    def append(self, item: T) -> Ledger[T]:
        """A ledger one item longer; this one is unchanged."""
        buf = self._buf
        with buf.lock:  # the tip, unclaimed: append in place (what writer() + close() do)
            if len(buf.items) == self._n and not buf.claimed:
                buf.items.append(item)
                if buf.index is not None:
                    buf.index.setdefault(item, self._n)
                return Ledger(buf, self._n + 1)
        writer = self.writer()
        writer.append(item)
        return writer.close()

    def writer(self) -> LedgerWriter[T]:
        """Exclusive, fast appends after this view: the buffer's tip if free, else a copy."""
        buf = self._buf
        with buf.lock:
            if len(buf.items) == self._n and not buf.claimed:
                buf.build_index()
                buf.claimed = True
                return LedgerWriter(buf, self._n)
        fresh = _Buffer(buf.items[: self._n], buf.indexed)
        fresh.build_index()
        fresh.claimed = True
        return LedgerWriter(fresh, self._n)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):  # a list of the items it selects, as a list's slice
            return self._slice(i)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        item: T = self._buf.items[i]
        return item

    def _slice(self, s: slice) -> list[T]:
        start, stop, step = s.indices(self._n)
        items = self._buf.items
        if step == 1:
            return list(items[start:stop])
        return [items[k] for k in range(start, stop, step)]

    def __iter__(self) -> Iterator[T]:
        return iter(self._buf.items[: self._n])  # a C copy of the visible prefix

    def __contains__(self, item: object) -> bool:
        buf = self._buf
        if not buf.indexed:
            return any(x == item for x in self)
        index = buf.index
        if index is None:
            with buf.lock:
                index = buf.build_index()
            assert index is not None
        at = index.get(item)
        return at is not None and at < self._n

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ledger):
            return NotImplemented
        return self._n == other._n and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash((self._n, tuple(self)))

    def __repr__(self) -> str:
        return f"Ledger(n={self._n})"

    def between(self, lo: int, hi: int) -> Sequence[T]:
        """A copy of the visible items ``lo <= i < hi`` (a list, or an int array)."""
        out: Sequence[T] = self._buf.items[max(lo, 0) : min(hi, self._n)]
        return out

    def int_sha256(self) -> str:
        """sha256 of ``int_bytes()``, without copying the items when it can: while the
        lock is held and no writer holds a claim, nothing can resize the buffer."""
        buf, items = self._buf, self._buf.items
        if isinstance(items, array) and sys.byteorder == "little":
            with buf.lock:
                if not buf.claimed:
                    with memoryview(items) as whole, whole[: self._n] as view:
                        return hashlib.sha256(view).hexdigest()
        out = items[: self._n] if isinstance(items, array) else array("q", items[: self._n])
        if sys.byteorder == "big":  # pragma: no cover - canonical bytes are little-endian
            out.byteswap()
        return hashlib.sha256(out).hexdigest()

    def int_bytes(self) -> bytes:
        """The visible items as little-endian int64 bytes (integer ledgers only)."""
        items = self._buf.items
        out = items[: self._n] if isinstance(items, array) else array("q", items[: self._n])
        if sys.byteorder == "big":  # pragma: no cover - canonical bytes are little-endian
            out = array("q", out)
            out.byteswap()
        return out.tobytes()


class LedgerWriter(Ledger[T]):
    """A Ledger that appends to its claimed buffer without locking; ``close`` freezes it."""

    __slots__ = ("_index", "_items", "_start")

    def __init__(self, buf: _Buffer, n: int) -> None:
        super().__init__(buf, n)
        self._items, self._index = buf.items, buf.index  # the replay hot path reads these
        self._start = n  # abort() keeps everything below this: it may be seen already

    def append(self, item: T) -> None:  # type: ignore[override]
        """Add one item at the end, in place."""
        self._items.append(item)
        if self._index is not None:
            self._index.setdefault(item, self._n)
        self._n += 1

    def pusher(self) -> Callable[[T], None]:
        """The buffer's own ``append``, for a loop that appends many items at C speed
        (unindexed ledgers only); call ``sync`` before this ledger is read again."""
        if self._index is not None:
            raise TypeError("an indexed ledger appends through append()")
        push: Callable[[T], None] = self._items.append
        return push

    def sync(self) -> None:
        """Count what ``pusher`` appended (the writer owns its buffer's tip)."""
        self._n = len(self._items)

    @property
    def last(self) -> T:
        """The last visible item."""
        item: T = self._items[self._n - 1]
        return item

    def view(self) -> Ledger[T]:
        """An immutable Ledger of what is visible now; the writer keeps its claim."""
        self._start = self._n
        return Ledger(self._buf, self._n)

    def close(self) -> Ledger[T]:
        """Release the buffer; the result sees every item appended."""
        with self._buf.lock:
            self._buf.claimed = False
        return Ledger(self._buf, self._n)

    def abort(self) -> None:
        """Drop what was appended since the claim (or the last view) and release."""
        buf = self._buf
        if buf.index is not None:
            for item in buf.items[self._start :]:
                if buf.index.get(item, -1) >= self._start:
                    del buf.index[item]
        del buf.items[self._start :]
        self._n = self._start
        with buf.lock:
            buf.claimed = False
