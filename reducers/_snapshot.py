"""State <-> bytes, for the store's snapshot cache. Pure: bytes in, state out.

A snapshot is a small canonical-JSON header (config, nodes, markers, the
obligation maps) plus the append-only ledgers cut into fixed chunks of
``CHUNK`` items. Ledgers only grow, so a new snapshot rewrites only the chunks
that changed since the last one: saving stays cheap on a million-turn session,
and reopening reads the turn tables as raw little-endian int64s.
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import attrs
import cattrs

from reducers._events import SessionConfig
from reducers._ledger import Ledger
from reducers._state import (
    Marker,
    NegativeFact,
    Node,
    OpenCall,
    PendingConstraint,
    SessionState,
    Spill,
    Truncation,
    canonical_json,
)

T = TypeVar("T")
CHUNK = 65_536
INT_LEDGERS = ("tok_starts", "turn_versions", "checkpoints")
OBJECT_LEDGERS: dict[str, type[Any]] = {"call_ids": str, "truncations": Truncation, "spills": Spill}
LEDGERS = (*INT_LEDGERS, *OBJECT_LEDGERS)
_MAPPINGS: dict[str, type[Any]] = {
    "nodes": Node,
    "markers": Marker,
    "open_calls": OpenCall,
    "constraints": PendingConstraint,
    "dispositions": NegativeFact,
}
_conv = cattrs.Converter()

Chunk = tuple[str, int, bytes]


def ledger_lengths(state: SessionState) -> dict[str, int]:
    """How many items each ledger of ``state`` holds."""
    return {name: len(getattr(state, name)) for name in LEDGERS}


def to_snapshot(
    state: SessionState, since: Mapping[str, int] | None = None
) -> tuple[bytes, list[Chunk]]:
    """The header and the ledger chunks that changed since lengths ``since``."""
    head = {
        "version": state.version,
        "config": None if state.config is None else attrs.asdict(state.config),
        "truncated": [list(span) for span in state.truncated],
        "lengths": ledger_lengths(state),
        **{name: _dump(getattr(state, name)) for name in _MAPPINGS},
    }
    if state.withdrawn:  # absent before 0.2: old snapshots read as "nothing withdrawn"
        head["withdrawn"] = [list(span) for span in state.withdrawn]
    chunks = [
        (name, k, _encode(name, getattr(state, name), k))
        for name in LEDGERS
        for k in _changed(len(getattr(state, name)), (since or {}).get(name, 0))
    ]
    return canonical_json(head), chunks


def from_snapshot(header: bytes, chunks: Mapping[str, Sequence[bytes]]) -> SessionState:
    """The state saved as ``header`` plus every chunk (in order) of each ledger.

    Raises ``ValueError`` (or ``KeyError``/``TypeError``) when the bytes are not a
    complete snapshot.
    """
    head = json.loads(header)
    lengths = head["lengths"]
    ledgers: dict[str, Any] = {
        name: _decode(name, chunks.get(name, ()), lengths[name]) for name in LEDGERS
    }
    config = head["config"]
    fields: dict[str, Any] = {name: _load(head[name], cls) for name, cls in _MAPPINGS.items()}
    return SessionState(
        version=head["version"],
        config=None if config is None else SessionConfig(**config),
        truncated=tuple((lo, hi) for lo, hi in head["truncated"]),
        withdrawn=tuple((lo, hi) for lo, hi in head.get("withdrawn", ())),
        **ledgers,
        **fields,
    )


def _changed(length: int, since: int) -> range:
    return range(min(since, length) // CHUNK, (length + CHUNK - 1) // CHUNK)


def _encode(name: str, ledger: Ledger[Any], k: int) -> bytes:
    items = ledger.between(k * CHUNK, (k + 1) * CHUNK)
    if name in INT_LEDGERS:
        return _int_bytes(items)
    return canonical_json([_conv.unstructure(item) for item in items])


def _decode(name: str, chunks: Sequence[bytes], length: int) -> Ledger[Any]:
    if name in INT_LEDGERS:
        ints = array("q")
        ints.frombytes(b"".join(chunks))
        if sys.byteorder == "big":  # pragma: no cover - stored little-endian
            ints.byteswap()
        ledger: Ledger[Any] = Ledger.of_ints(ints)
    else:
        cls = OBJECT_LEDGERS[name]
        items = [item for chunk in chunks for item in json.loads(chunk)]
        if cls is str:
            if not all(type(item) is str for item in items):
                raise ValueError(f"snapshot ledger {name} holds a non-string")
        else:
            items = [_conv.structure(item, cls) for item in items]
        ledger = Ledger.of(items, indexed=name == "call_ids")
    if len(ledger) != length:
        raise ValueError(f"snapshot ledger {name} has {len(ledger)} items, header says {length}")
    return ledger


def _int_bytes(items: Sequence[int]) -> bytes:
    out = array("q", items)
    if sys.byteorder == "big":  # pragma: no cover - canonical bytes are little-endian
        out.byteswap()
    return out.tobytes()


def _dump(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _conv.unstructure(v) for k, v in sorted(values.items())}


def _load(data: dict[str, Any], cls: type[T]) -> Mapping[str, T]:
    return MappingProxyType({k: _conv.structure(v, cls) for k, v in data.items()})


def chunk_rows(chunks: Iterator[tuple[str, bytes]]) -> dict[str, list[bytes]]:
    """Group ``(ledger, data)`` rows, already in chunk order, by ledger."""
    out: dict[str, list[bytes]] = {}
    for name, data in chunks:
        out.setdefault(name, []).append(data)
    return out
