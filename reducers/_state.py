"""Reduced session state: frozen values, positions in the session's unit, sha256.

``sha256`` hashes ``to_json``, whose meaning is kept from 0.1: a field added later
shows only when it holds something, and an obligation's ``version`` (where it was
raised, for ``invariants.owed``) is bookkeeping the hash leaves out, so a journal
written before hashes exactly as it did.
"""

from __future__ import annotations

import bisect
import hashlib
from array import array
from collections.abc import Collection, Iterable, Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Any, Protocol

import attrs

from reducers._events import SessionConfig
from reducers._json import canonical_bytes
from reducers._ledger import Ledger

Span = tuple[int, int]


@attrs.frozen(kw_only=True)
class OpenCall:
    """A call that has not come back, and where it was opened."""

    call_id: str
    kind: str
    name: str
    position: int
    version: int = 0  # the CallOpened's (0: not known); not hashed


@attrs.frozen(kw_only=True)
class PendingConstraint:
    """A user constraint not yet lifted."""

    key: str
    text: str
    position: int
    version: int = 0  # the ConstraintStated's (0: not known); not hashed

    @property
    def digest(self) -> str:
        """The digest a node's or a re-tell's claim to carry it must match."""
        return constraint_digest(self.key, self.text)


@attrs.frozen(kw_only=True)
class NegativeFact:
    """The latest disposition recorded for a key."""

    key: str
    disposition: str
    reason: str
    position: int
    version: int = 0  # the ItemDisposed's (0: not known); not hashed


@attrs.frozen(kw_only=True)
class Truncation:
    """A range dropped by budget enforcement."""

    lo: int
    hi: int
    reason: str
    version: int


@attrs.frozen(kw_only=True)
class Spill:
    """A spill file holding the raw range ``[lo, hi)``; ``handle`` is relative to the db folder."""

    lo: int
    hi: int
    handle: str
    sha256: str
    bytes: int
    version: int


@attrs.frozen(kw_only=True)
class Node:
    """A summary node, with what it carries and what it had to carry when committed."""

    node_id: str
    tier: int
    input_lo: int
    input_hi: int
    covers_lo: int
    covers_hi: int
    tail_start: int
    summary: str
    tokens: int
    dispositions: Mapping[str, str]
    resolved_ids: tuple[str, ...]
    unresolved_ids: tuple[str, ...]
    constraints: tuple[str, ...]
    replaces: tuple[str, ...]
    version: int
    live: bool = True
    replaced_by: str | None = None
    required_calls: tuple[str, ...] = ()
    required_constraints: tuple[str, ...] = ()
    required_dispositions: Mapping[str, str] = attrs.field(factory=dict)
    # keys in ``constraints`` whose live text the node does not carry -> the digest of
    # the text it did see ("" for none): listed while not pending, or restated since
    stale_constraints: Mapping[str, str] = attrs.field(factory=dict)

    def carries_constraint(self, key: str) -> bool:
        """Whether the node carries the pending constraint ``key`` with its live text."""
        return key in self.constraints and key not in self.stale_constraints


@attrs.frozen(kw_only=True)
class Told:
    """A live obligation a re-tell turn states, and what it stated: a constraint's
    digest, a negative fact's disposition, nothing for an open call."""

    kind: str  # "constraint", "negative_fact" or "open_call"
    key: str
    turn: int
    stated: str
    version: int

    @staticmethod
    def slot(kind: str, key: str) -> str:
        """The key of ``SessionState.retold`` for an obligation."""
        return f"{kind}:{key}"


@attrs.frozen(kw_only=True)
class Marker:
    """A recovery marker; ``valid`` turns false when a compaction breaks it."""

    marker_id: str
    node_id: str
    tier_depth: int
    resolved_ids: tuple[str, ...]
    version: int
    valid: bool = True
    invalidated_rule: str | None = None
    invalidated_reason: str | None = None


def constraint_digest(key: str, text: str) -> str:
    """sha256 of a constraint's key and text: a claim to carry it names this text."""
    return hashlib.sha256(canonical_bytes([key, text])).hexdigest()


def merge_spans(spans: Iterable[Span]) -> tuple[Span, ...]:
    """Sorted, disjoint, non-adjacent union of half-open spans."""
    out: list[list[int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def span_covered(spans: tuple[Span, ...], lo: int, hi: int) -> bool:
    """Whether merged ``spans`` cover all of ``[lo, hi)``."""
    if lo >= hi:
        return True
    i = bisect.bisect_right(spans, (lo, float("inf"))) - 1
    return i >= 0 and spans[i][0] <= lo and spans[i][1] >= hi


def in_spans(spans: tuple[Span, ...], pos: int) -> bool:
    """Whether ``pos`` lies inside one of the merged ``spans``."""
    return span_covered(spans, pos, pos + 1)


class _Ints(Protocol):
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> int: ...


def last_position(config: SessionConfig | None, tok_starts: _Ints) -> int:
    """The last turn's position: its index, or its first token in a token session."""
    turns = len(tok_starts) - 1
    if not turns:
        return 0
    by_turn = config is None or config.truncator_unit == "turns"
    return turns - 1 if by_turn else tok_starts[turns - 1]


_DEFAULT_CONFIG = SessionConfig(
    window_tokens=0,
    trigger_tokens=0,
    truncator_unit="turns",
    floor_span=0,
    floor_unit="turns",
    on_unsafe="halt",
)


@attrs.frozen(kw_only=True)
class SessionState:
    """The state of one session at one version, rebuilt by folding its events."""

    version: int = 0
    config: SessionConfig | None = None
    tok_starts: Ledger[int] = attrs.field(factory=lambda: Ledger.of_ints(array("q", [0])))
    turn_versions: Ledger[int] = attrs.field(factory=lambda: Ledger.of_ints(array("q")))
    call_ids: Ledger[str] = attrs.field(factory=lambda: Ledger.of([], indexed=True))
    truncations: Ledger[Truncation] = attrs.field(factory=lambda: Ledger.of([]))
    spills: Ledger[Spill] = attrs.field(factory=lambda: Ledger.of([]))
    checkpoints: Ledger[int] = attrs.field(factory=lambda: Ledger.of([]))
    truncated: tuple[Span, ...] = ()
    nodes: Mapping[str, Node] = attrs.field(factory=lambda: MappingProxyType({}))
    markers: Mapping[str, Marker] = attrs.field(factory=lambda: MappingProxyType({}))
    open_calls: Mapping[str, OpenCall] = attrs.field(factory=lambda: MappingProxyType({}))
    constraints: Mapping[str, PendingConstraint] = attrs.field(factory=lambda: MappingProxyType({}))
    dispositions: Mapping[str, NegativeFact] = attrs.field(factory=lambda: MappingProxyType({}))
    # turn-index spans the runtime took out of its working context (TurnRetracted,
    # ContextCleared); merged, and empty in every session that never used those events
    withdrawn: tuple[Span, ...] = ()
    # the obligations re-told (Retold) and still live, by Told.slot: the latest turn each
    retold: Mapping[str, Told] = attrs.field(factory=lambda: MappingProxyType({}))

    # -- positions -------------------------------------------------------------------
    @property
    def unit(self) -> str:
        """The unit every range of this session is expressed in."""
        return (self.config or _DEFAULT_CONFIG).truncator_unit

    @property
    def turns(self) -> int:
        """How many L0 turns were appended."""
        return len(self.tok_starts) - 1

    @property
    def tokens_total(self) -> int:
        """Tokens of every L0 turn appended."""
        return self.tok_starts[-1]

    @property
    def end(self) -> int:
        """The log's end position in the session's unit."""
        return self.turns if self.unit == "turns" else self.tokens_total

    def position_of_turn(self, index: int) -> int:
        """Turn ``index``'s start in the session's unit."""
        return index if self.unit == "turns" else self.tok_starts[index]

    @property
    def last_position(self) -> int:
        """Where an obligation raised now is positioned (0 before any turn)."""
        return last_position(self.config, self.tok_starts)

    def on_boundary(self, pos: int) -> bool:
        """Whether ``pos`` is a turn boundary inside the log."""
        if not 0 <= pos <= self.end:
            return False
        if self.unit == "turns":
            return True
        i = bisect.bisect_left(self.tok_starts, pos)
        return i < len(self.tok_starts) and self.tok_starts[i] == pos

    def turn_index(self, pos: int) -> int:
        """The turn that starts at boundary ``pos``."""
        return pos if self.unit == "turns" else bisect.bisect_left(self.tok_starts, pos)

    def turn_stop(self, hi: int) -> int:
        """The index after the last turn of a range ending at boundary ``hi``.

        A range that ends at the log's end holds every turn, the zero-token turns
        that start there included; any other range stops at the first turn that
        starts at ``hi``.
        """
        return self.turns if hi >= self.end else self.turn_index(hi)

    def turns_before(self, at: int) -> int:
        """How many turns end at or before position ``at`` (a raw checkpoint's prefix)."""
        if self.unit == "turns":
            return min(at, self.turns)
        return min(bisect.bisect_right(self.tok_starts, at) - 1, self.turns)

    def turns_at(self, pos: int) -> range:
        """The turns that start at position ``pos`` (several only for zero-token turns)."""
        if self.unit == "turns":
            return range(pos, min(pos + 1, self.turns))
        lo = bisect.bisect_left(self.tok_starts, pos)
        hi = bisect.bisect_right(self.tok_starts, pos)
        return range(lo, min(hi, self.turns))

    def tokens_in(self, lo: int, hi: int) -> int:
        """Tokens of the turns in ``[lo, hi)`` (boundaries in the session's unit)."""
        if self.unit == "tokens":
            return hi - lo
        return self.tok_starts[hi] - self.tok_starts[lo]

    # -- tiers -----------------------------------------------------------------------
    @property
    def live_nodes(self) -> tuple[Node, ...]:
        """Live summary nodes in covered order."""
        live = (n for n in self.nodes.values() if n.live)
        return tuple(sorted(live, key=lambda n: (n.covers_lo, n.tier, n.version)))

    @property
    def depth(self) -> int:
        """The tier of the live digest framing the session (0 with no live node)."""
        return max((n.tier for n in self.nodes.values() if n.live), default=0)

    @property
    def tail_start(self) -> int:
        """Where the verbatim tail starts: the furthest live ``covers_hi``."""
        return max((n.covers_hi for n in self.nodes.values() if n.live), default=0)

    @property
    def evicted(self) -> tuple[Span, ...]:
        """Ranges no longer resident verbatim: truncated, folded into a live node, or
        withdrawn by the runtime."""
        return merge_spans(
            [
                *self.truncated,
                *((n.covers_lo, n.covers_hi) for n in self.live_nodes),
                *self.withdrawn_positions,
            ]
        )

    @property
    def withdrawn_positions(self) -> tuple[Span, ...]:
        """The withdrawn turns as non-empty ranges in the session's unit."""
        spans = (
            (self.position_of_turn(lo), self.position_of_turn(hi)) for lo, hi in self.withdrawn
        )
        return tuple((lo, hi) for lo, hi in spans if lo < hi)

    def is_withdrawn(self, index: int) -> bool:
        """Whether the runtime took turn ``index`` out of its working context."""
        return in_spans(self.withdrawn, index)

    @property
    def occupancy(self) -> int:
        """Tokens resident: live summaries plus verbatim turns."""
        gone = sum(self.tokens_in(lo, hi) for lo, hi in self.evicted)
        return self.tokens_total - gone + sum(n.tokens for n in self.live_nodes)

    @property
    def spilled(self) -> tuple[Span, ...]:
        """Merged ranges that some spill file holds."""
        return merge_spans((s.lo, s.hi) for s in self.spills)

    # -- canonical form --------------------------------------------------------------
    def ledger_digests(self) -> dict[str, str]:
        """The sha256 of the big ledgers, as ``to_json`` shows them: ``tok_starts`` and
        ``turn_versions`` as little-endian int64 bytes, ``call_ids`` by
        :func:`call_ids_sha256`."""
        return {
            "turn_tokens_sha256": self.tok_starts.int_sha256(),
            "turn_versions_sha256": self.turn_versions.int_sha256(),
            "calls_seen_sha256": call_ids_sha256(self.call_ids),
        }

    def to_json(self, digests: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The state as plain JSON data (what ``sha256`` hashes).

        Keys added after 0.1 appear only when they hold something, so a session that
        never used the newer events hashes exactly as it did. ``digests`` stands in for
        ``ledger_digests()``: a snapshot check passes what it hashed while it read the
        very bytes these ledgers were built from.
        """
        d = self.ledger_digests() if digests is None else digests
        out: dict[str, Any] = {
            "version": self.version,
            "config": None if self.config is None else attrs.asdict(self.config),
            "unit": self.unit,
            "turns": self.turns,
            "tokens_total": self.tokens_total,
            "turn_tokens_sha256": d["turn_tokens_sha256"],
            "turn_versions_sha256": d["turn_versions_sha256"],
            "calls_seen": len(self.call_ids),
            "calls_seen_sha256": d["calls_seen_sha256"],
            "occupancy": self.occupancy,
            "depth": self.depth,
            "tail_start": self.tail_start,
            "nodes": {k: _node(v) for k, v in sorted(self.nodes.items())},
            "markers": {k: _plain(v) for k, v in sorted(self.markers.items())},
            "open_calls": {k: _obligation(v) for k, v in sorted(self.open_calls.items())},
            "constraints": {k: _obligation(v) for k, v in sorted(self.constraints.items())},
            "dispositions": {k: _obligation(v) for k, v in sorted(self.dispositions.items())},
            "truncations": [_plain(t) for t in self.truncations],
            "spills": [_plain(s) for s in self.spills],
            "checkpoints": list(self.checkpoints),
        }
        if self.withdrawn:
            out["withdrawn"] = [list(span) for span in self.withdrawn]
        if self.retold:
            out["retold"] = {k: _plain(v) for k, v in sorted(self.retold.items())}
        return out

    @cached_property
    def sha256(self) -> str:
        """sha256 of the canonical JSON: equal states hash equal on any run."""
        return self.sha256_with(None)

    def sha256_with(self, digests: Mapping[str, str] | None) -> str:
        """``sha256``, with ``digests`` standing in for ``ledger_digests()`` (see ``to_json``)."""
        return hashlib.sha256(canonical_bytes(self.to_json(digests))).hexdigest()


def call_ids_sha256(ids: Collection[str]) -> str:
    """The sha256 of call ids: of their UTF-8 joined by newlines (as every release has
    hashed them), unless an id holds a newline itself, where that join is ambiguous
    (``["a\\nb", "c"]`` and ``["a", "b\\nc"]`` join alike): then of a 0xFF byte (never
    in UTF-8, so never the start of a join) and their canonical JSON array."""
    joined = "\n".join(ids)
    if joined.count("\n") == max(len(ids) - 1, 0):
        return hashlib.sha256(joined.encode()).hexdigest()
    return hashlib.sha256(b"\xff" + canonical_bytes(list(ids))).hexdigest()


def _plain(value: Any) -> dict[str, Any]:
    return attrs.asdict(value, value_serializer=_serialize)


def _node(node: Node) -> dict[str, Any]:
    out = _plain(node)
    if not node.stale_constraints:  # added after 0.1: shown only when it holds something
        del out["stale_constraints"]
    return out


def _obligation(value: OpenCall | PendingConstraint | NegativeFact) -> dict[str, Any]:
    out = _plain(value)
    del out["version"]  # bookkeeping, not hashed (see the module's docstring)
    return out


def _serialize(_: Any, __: Any, value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(sorted(value.items()))
    return value
