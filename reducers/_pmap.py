"""A persistent mapping whose versions share one dict, without copying it.

What :class:`~reducers._ledger.Ledger` is to the append-only parts of a state,
:class:`PMap` is to its small mutable maps (open calls, constraints, nodes, ...).
A *family* of versions shares one dict. The family's newest version reads it
directly; the one writer of the family (a fold's accumulator, see
:class:`PMapWriter`) updates it in place and records, for the version it moved
away from, the value each key had before. An older version that is read again is
rebuilt once from the shared dict and those records (then it owns its own copy),
so no version a caller holds ever changes, and a fold that freezes its state
before every event (to validate the next one) pays O(1) per write instead of a
copy of the whole mapping.

A writer that starts from a version that is not its family's newest, or whose
family is claimed by another writer, starts a new family from a copy (a branch).
Reads of shared versions and the writer's writes take the family's lock, so a
state read in one thread while another thread folds on top of it still sees its
own items.
"""

from __future__ import annotations

import threading
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MISSING: Any = object()


class _Family:
    """The dict a family of versions shares, its lock, and whether a writer holds it."""

    __slots__ = ("claimed", "data", "lock")

    def __init__(self, data: dict[Any, Any]) -> None:
        self.data = data
        self.lock = threading.Lock()
        self.claimed = False


class PMap(Mapping[K, V]):
    """One immutable version of a mapping (read-only, like ``MappingProxyType``)."""

    __slots__ = ("_fam", "_next", "_own", "_undo")

    def __init__(self, fam: _Family) -> None:
        self._fam = fam
        self._own: dict[K, V] | None = None  # a dict of this version alone, never written
        # Writes made to the family's dict since this version was frozen, as (key, value
        # before); None while there were none (then the family's dict is this version).
        self._undo: list[tuple[Any, Any]] | None = None
        self._next: PMap[K, V] | None = None  # the version frozen after this one

    @classmethod
    def of(cls, items: Mapping[K, V] | None = None) -> PMap[K, V]:
        """A version holding a copy of ``items``, on a family of its own."""
        out: PMap[K, V] = cls(_Family(dict(items or {})))
        return out

    # -- reading -------------------------------------------------------------------------
    def _dict(self) -> dict[K, V]:
        """This version's items: the family's dict if it is the newest (call with the
        lock held), else its own copy, rebuilt once."""
        own = self._own
        if own is not None:
            return own
        if self._undo is None and self._next is None:
            data: dict[K, V] = self._fam.data
            return data
        return self._rebuild()

    def _rebuild(self) -> dict[K, V]:
        chain: list[PMap[K, V]] = []
        at: PMap[K, V] = self
        while at._own is None and at._next is not None:
            chain.append(at)
            at = at._next
        if at._own is not None:
            items = dict(at._own)
        else:  # the family's newest version: its dict, less what was written since
            items = dict(self._fam.data)
            chain.append(at)
        for version in reversed(chain):
            for key, old in reversed(version._undo or ()):
                if old is _MISSING:
                    del items[key]
                else:
                    items[key] = old
        self._own, self._undo, self._next = items, None, None
        return items

    def snapshot(self) -> dict[K, V]:
        """A dict of this version's items that no one else holds or writes."""
        own = self._own
        if own is not None:
            return dict(own)
        with self._fam.lock:
            return dict(self._dict())

    def _stable(self) -> dict[K, V]:
        """This version's items in a dict no writer touches (owned, or a copy)."""
        own = self._own
        if own is not None:
            return own
        with self._fam.lock:
            items = self._dict()
            return items if items is self._own else dict(items)

    def __getitem__(self, key: K) -> V:
        own = self._own
        if own is not None:
            return own[key]
        with self._fam.lock:
            return self._dict()[key]

    def get(self, key: K, default: Any = None) -> Any:
        own = self._own
        if own is not None:
            return own.get(key, default)
        with self._fam.lock:
            return self._dict().get(key, default)

    def __contains__(self, key: object) -> bool:
        own = self._own
        if own is not None:
            return key in own
        with self._fam.lock:
            return key in self._dict()

    def __len__(self) -> int:
        own = self._own
        if own is not None:
            return len(own)
        with self._fam.lock:
            return len(self._dict())

    def __iter__(self) -> Iterator[K]:
        return iter(self._stable())

    def keys(self) -> KeysView[K]:
        return self._stable().keys()

    def values(self) -> ValuesView[V]:
        return self._stable().values()

    def items(self) -> ItemsView[K, V]:
        return self._stable().items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PMap):
            return self._stable() == other._stable()
        if isinstance(other, Mapping):
            return self._stable() == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like a dict: unhashable

    def __repr__(self) -> str:
        return f"PMap({self._stable()!r})"


class PMapWriter(Generic[K, V]):
    """The one writer of a family: in-place writes, each recorded for the version frozen
    last; ``freeze`` makes a new version, ``close`` also releases the family."""

    __slots__ = ("_data", "_fam", "_frozen", "_undo")

    def __init__(self, base: Mapping[K, V]) -> None:
        if isinstance(base, PMap):
            fam = base._fam
            with fam.lock:
                if base._dict() is fam.data and not fam.claimed:
                    fam.claimed = True
                    self._start(fam, base)
                    return
        self._start(_Family(dict(base.items())), None)
        self._fam.claimed = True

    def _start(self, fam: _Family, frozen: PMap[K, V] | None) -> None:
        self._fam = fam
        self._data: dict[K, V] = fam.data
        self._frozen = frozen  # the version the writes are recorded for (None: nobody sees)
        self._undo: list[tuple[Any, Any]] | None = None

    # -- reads of the working copy (the writer's own thread) -----------------------------
    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: K, default: Any = None) -> Any:
        return self._data.get(key, default)

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def keys(self) -> KeysView[K]:
        return self._data.keys()

    def values(self) -> ValuesView[V]:
        return self._data.values()

    def items(self) -> ItemsView[K, V]:
        return self._data.items()

    # -- writes --------------------------------------------------------------------------
    def _record(self) -> list[tuple[Any, Any]] | None:
        undo = self._undo
        if undo is None and self._frozen is not None:
            undo = self._undo = self._frozen._undo = []
        return undo

    def __setitem__(self, key: K, value: V) -> None:
        with self._fam.lock:
            undo = self._record()
            if undo is not None:
                undo.append((key, self._data.get(key, _MISSING)))
            self._data[key] = value

    def pop(self, key: K, default: Any = None) -> Any:
        """Remove ``key``; its value, or ``default`` if it was absent."""
        if key not in self._data:
            return default
        with self._fam.lock:
            undo = self._record()
            if undo is not None:
                undo.append((key, self._data[key]))
            return self._data.pop(key)

    # -- versions ------------------------------------------------------------------------
    def freeze(self) -> PMap[K, V]:
        """The current items as a version no later write changes."""
        frozen = self._frozen
        if frozen is not None and self._undo is None:
            return frozen  # nothing written since: the same version
        version: PMap[K, V] = PMap(self._fam)
        with self._fam.lock:
            if frozen is not None:
                frozen._next = version
            self._frozen, self._undo = version, None
        return version

    def close(self) -> PMap[K, V]:
        """Freeze and release the family to the next writer."""
        version = self.freeze()
        with self._fam.lock:
            self._fam.claimed = False
        return version

    def abort(self) -> None:
        """Undo the writes since the last freeze and release the family."""
        with self._fam.lock:
            for key, old in reversed(self._undo or ()):
                if old is _MISSING:
                    del self._data[key]
                else:
                    self._data[key] = old
            if self._frozen is not None:
                self._frozen._undo = None
            self._undo = None
            self._fam.claimed = False
