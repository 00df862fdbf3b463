"""State <-> bytes, for the store's snapshot cache. Pure: bytes in, state out.

Layout: 8-byte little-endian header length, the canonical JSON header, then the
turn-start and turn-version tables as little-endian int64s (the parts that grow
with every turn, kept binary so that reopening a million-turn session is fast).
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Mapping
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
_conv = cattrs.Converter()


def to_snapshot(state: SessionState) -> bytes:
    """The bytes that :func:`from_snapshot` turns back into ``state``."""
    head = {
        "version": state.version,
        "turns": state.turns,
        "config": None if state.config is None else attrs.asdict(state.config),
        "call_ids": list(state.call_ids),
        "truncations": [attrs.asdict(t) for t in state.truncations],
        "spills": [attrs.asdict(s) for s in state.spills],
        "checkpoints": list(state.checkpoints),
        "truncated": [list(span) for span in state.truncated],
        "nodes": _dump(state.nodes),
        "markers": _dump(state.markers),
        "open_calls": _dump(state.open_calls),
        "constraints": _dump(state.constraints),
        "dispositions": _dump(state.dispositions),
    }
    raw = canonical_json(head)
    tok = state.tok_starts.int_bytes()
    return len(raw).to_bytes(8, "little") + raw + tok + state.turn_versions.int_bytes()


def from_snapshot(blob: bytes) -> SessionState:
    """The state stored by :func:`to_snapshot` (``ValueError`` if the bytes are not one)."""
    size = int.from_bytes(blob[:8], "little")
    head = _json(blob[8 : 8 + size])
    turns = head["turns"]
    tok = _ints(blob[8 + size : 8 + size + 8 * (turns + 1)])
    versions = _ints(blob[8 + size + 8 * (turns + 1) :])
    if len(tok) != turns + 1 or len(versions) != turns:
        raise ValueError("snapshot turn tables are truncated")
    config = head["config"]
    return SessionState(
        version=head["version"],
        config=None if config is None else SessionConfig(**config),
        tok_starts=Ledger.of_ints(tok),
        turn_versions=Ledger.of_ints(versions),
        call_ids=Ledger.of(list(head["call_ids"]), indexed=True),
        truncations=Ledger.of([_conv.structure(t, Truncation) for t in head["truncations"]]),
        spills=Ledger.of([_conv.structure(s, Spill) for s in head["spills"]]),
        checkpoints=Ledger.of(list(head["checkpoints"])),
        truncated=tuple((lo, hi) for lo, hi in head["truncated"]),
        nodes=_load(head["nodes"], Node),
        markers=_load(head["markers"], Marker),
        open_calls=_load(head["open_calls"], OpenCall),
        constraints=_load(head["constraints"], PendingConstraint),
        dispositions=_load(head["dispositions"], NegativeFact),
    )


def _ints(raw: bytes) -> array[int]:
    out = array("q")
    out.frombytes(raw)
    if sys.byteorder == "big":  # pragma: no cover - stored little-endian
        out.byteswap()
    return out


def _json(raw: bytes) -> dict[str, Any]:
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("snapshot header is not an object")
    return data


def _dump(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _conv.unstructure(v) for k, v in sorted(values.items())}


def _load(data: dict[str, Any], cls: type[T]) -> Mapping[str, T]:
    return MappingProxyType({k: _conv.structure(v, cls) for k, v in data.items()})
