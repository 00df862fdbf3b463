"""Snapshots, in one place: when one is taken, how it is encoded, what it must prove.

A snapshot caches a session's reduced state: a small canonical-JSON header (config,
nodes, markers, the obligation maps, and the hash of the event it stands for) plus
the append-only ledgers cut into chunks of ``CHUNK`` items. Ledgers only grow, so a
new snapshot rewrites only the chunks that changed since the last one.

Nothing read back is trusted unchecked. A reopen uses a snapshot only when

1. its bytes decode to a :class:`SessionState` (any other shape is a problem, not a crash),
2. that state has the sha256 recorded beside it (edited bytes show): its big ledgers
   hashed as their chunks are read, and built from those same checked bytes, and
3. the log holds an event at the snapshot's version whose hash is the one the snapshot
   recorded (it stands for this session at that version, and the log was not cut).

Otherwise the session is replayed from its log, the problem is logged on the
``tierlog`` logger, and ``verify`` reports it. Snapshots written by tierlog 0.1 record
no event hash, and those written before ``FORMAT`` 2 no obligation's version (which
the state hash leaves out): a reopen replays instead of trusting either (and its next
commit writes a current snapshot); ``verify`` still checks its hash and compares it
with the replay. A ``FORMAT`` 2 snapshot (its call ids JSON arrays, not lines) is
checked and trusted as a current one, and the next save rewrites it whole.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import attrs

from eventstore._logging import bound
from eventstore._store._recorder import EventLog, ReplayReads, SnapshotStore
from reducers import (
    JournalError,
    Ledger,
    Marker,
    NegativeFact,
    Node,
    OpenCall,
    PendingConstraint,
    SessionConfig,
    SessionState,
    Spill,
    Told,
    Truncation,
    canonical_json,
    merge_spans,
)
from reducers._json import fast_loads
from reducers._state import call_ids_sha256

if TYPE_CHECKING:
    import cattrs

T = TypeVar("T")
FORMAT = 3  # 3: call ids stored as lines; 2: obligations hold their version, re-tells kept
TRUSTED = frozenset({2, FORMAT})  # 2's call ids are JSON arrays; its next save rewrites all
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
    "retold": Told,
}


@functools.cache
def _conv() -> cattrs.Converter:
    """The converter of ledger items (cattrs is imported when a snapshot is first used)."""
    import cattrs

    return cattrs.Converter()


@functools.cache
def _undecodable() -> tuple[type[BaseException], ...]:
    """What decoding bytes of the wrong shape can raise; all of it means "not a snapshot"."""
    import cattrs

    return (
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
        IndexError,
        OverflowError,
        RecursionError,
        cattrs.BaseValidationError,
        JournalError,
    )


Chunk = tuple[str, int, bytes]


class SnapshotError(ValueError):
    """The bytes are not a snapshot of the expected shape."""


# -- encoding (pure) ------------------------------------------------------------------
def ledger_lengths(state: SessionState) -> dict[str, int]:
    """How many items each ledger of ``state`` holds."""
    return {name: len(getattr(state, name)) for name in LEDGERS}


def encode(
    state: SessionState, head_hash: str, since: Mapping[str, int] | None = None
) -> tuple[bytes, list[Chunk]]:
    """The header and the ledger chunks that changed since lengths ``since``."""
    head: dict[str, Any] = {
        "format": FORMAT,
        "version": state.version,
        "head_hash": head_hash,
        "config": None if state.config is None else attrs.asdict(state.config),
        "lengths": ledger_lengths(state),
        **{name: _dump(getattr(state, name)) for name in _MAPPINGS},
    }
    if state.withdrawn:  # absent before 0.2: old snapshots read as "nothing withdrawn"
        head["withdrawn"] = [list(span) for span in state.withdrawn]
    chunks = [
        (name, k, _encode_chunk(name, getattr(state, name), k))
        for name in LEDGERS
        for k in _changed(len(getattr(state, name)), (since or {}).get(name, 0))
    ]
    return canonical_json(head), chunks


@attrs.frozen(kw_only=True)
class Decoded:
    """A snapshot's bytes, decoded."""

    state: SessionState
    head_hash: str | None  # the event it stands for; None for 0.1 or an untrusted format
    sha256: str  # the state's, from the bytes as read: the big ledgers hashed as they
    # streamed in, and built from those same bytes
    current: bool  # written in FORMAT (an older one is rewritten whole by the next save)


def decode(header: bytes, rows: Iterable[tuple[str, bytes]]) -> Decoded:
    """The state saved as ``header`` plus its ``(ledger, chunk data)`` rows (each
    ledger's in order), what it recorded, and its sha256 as the bytes read hash.

    Raises :class:`SnapshotError` for bytes of any other shape.
    """
    try:
        return _decode(header, rows)
    except _undecodable() as exc:
        raise SnapshotError(f"{type(exc).__name__}: {exc}") from None


def _decode(header: bytes, rows: Iterable[tuple[str, bytes]]) -> Decoded:
    head = json.loads(header)
    if not isinstance(head, dict):
        raise SnapshotError("the header is not a JSON object")
    lengths = head["lengths"]
    form = head.get("format")
    read = _read(rows, lines=form == FORMAT)
    ledgers: dict[str, Any] = {name: read[name].ledger(name, lengths[name]) for name in LEDGERS}
    config = head["config"]
    fields: dict[str, Any] = {
        name: _load(head.get(name, {}), cls) for name, cls in _MAPPINGS.items()
    }
    state = SessionState(
        version=_int(head["version"]),
        config=None if config is None else SessionConfig(**config),
        truncated=merge_spans((t.lo, t.hi) for t in ledgers["truncations"]),
        withdrawn=tuple((lo, hi) for lo, hi in head.get("withdrawn", ())),
        **ledgers,
        **fields,
    )
    digests = {key: read[name].digest() for key, name in _DIGESTS.items()}
    sha256 = state.sha256_with(digests)  # walks every field: a bad shape fails here
    head_hash = head.get("head_hash")
    if head_hash is not None and not isinstance(head_hash, str):
        raise SnapshotError("head_hash is not a string")
    trusted = form in TRUSTED  # an older format: checked, never trusted
    return Decoded(
        state=state, head_hash=head_hash if trusted else None, sha256=sha256, current=form == FORMAT
    )


# the state's ledger digests (SessionState.ledger_digests) and the ledger each hashes
_DIGESTS = {
    "turn_tokens_sha256": "tok_starts",
    "turn_versions_sha256": "turn_versions",
    "calls_seen_sha256": "call_ids",
}


def _read(rows: Iterable[tuple[str, bytes]], *, lines: bool) -> dict[str, _Ints | _Objects]:
    """Each ledger's chunks, taken in as they stream (the int ledgers hashed and copied
    chunk by chunk, so a 1M-turn snapshot never holds all its rows at once); ``lines``:
    the call ids are stored as lines (FORMAT 3), else as JSON arrays."""
    read: dict[str, _Ints | _Objects] = {
        name: _Ints() if name in INT_LEDGERS else _Objects() for name in LEDGERS
    }
    if lines:
        read["call_ids"] = _Lines()
    for name, data in rows:
        found = read.get(name)  # a ledger this version does not know: not read
        if found is not None:
            found.add(data)
    return read


class _Ints:
    """An int64 ledger being read: its little-endian bytes, hashed as they come."""

    def __init__(self) -> None:
        self.items = array("q")
        self.hash = hashlib.sha256()
        self.rest = b""  # the bytes of an item cut between two chunks

    def add(self, data: bytes) -> None:
        self.hash.update(data)
        if self.rest or len(data) % self.items.itemsize:
            data = self.rest + data
            cut = len(data) - len(data) % self.items.itemsize
            data, self.rest = data[:cut], data[cut:]
        self.items.frombytes(data)

    def digest(self) -> str:
        return self.hash.hexdigest()

    def ledger(self, name: str, length: object) -> Ledger[Any]:
        if self.rest:
            raise SnapshotError(f"ledger {name} ends inside an item")
        if sys.byteorder == "big":  # pragma: no cover - stored little-endian
            self.items.byteswap()
        return _counted(name, Ledger.of_ints(self.items), length)


class _Objects:
    """A ledger of JSON chunks being read (call ids, truncations, spills)."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.sha = ""  # of call ids: their sha256 as the state hashes them

    def add(self, data: bytes) -> None:
        self.chunks.append(data)

    def digest(self) -> str:
        return self.sha

    def ledger(self, name: str, length: object) -> Ledger[Any]:
        items: list[Any] = []
        for chunk in self.chunks:
            part = fast_loads(chunk)  # orjson, or json where the [fast] extra is not
            if type(part) is not list:
                raise SnapshotError(f"a chunk of ledger {name} is not a JSON array")
            items += part
        if name == "call_ids":
            if not all(type(item) is str for item in items):
                raise SnapshotError(f"ledger {name} holds a non-string")
            self.sha = call_ids_sha256(items)
            return _counted(name, Ledger.of(items, indexed=True), length)
        cls = OBJECT_LEDGERS[name]
        return _counted(name, Ledger.of([_conv().structure(item, cls) for item in items]), length)


class _Lines(_Objects):
    """Call ids stored as lines (see ``_lines``), chunks joined by a newline: hashed as
    they stream in (lines with no escape are the very join the state hashes), decoded
    as UTF-8 at once, split into strings when first read."""

    def __init__(self) -> None:
        super().__init__()
        self.hash = hashlib.sha256()
        self.escaped = False

    def add(self, data: bytes) -> None:
        if self.chunks:
            self.hash.update(b"\n")
        self.hash.update(data)
        self.escaped = self.escaped or b"\\" in data
        self.chunks.append(data)

    def digest(self) -> str:
        return self.sha if self.escaped else self.hash.hexdigest()

    def ledger(self, name: str, length: object) -> Ledger[Any]:
        text = b"\n".join(self.chunks).decode()  # strict: what it hashed is its encoding
        if self.escaped:  # rare: an id holds a backslash or a newline
            items = [_unescape(line) for line in text.split("\n")]
            self.sha = call_ids_sha256(items)
            return _counted(name, Ledger.of(items, indexed=True), length)
        n = text.count("\n") + 1 if self.chunks else 0
        split = functools.partial(str.split, text, "\n")
        return _counted(name, Ledger.deferred(n, split, indexed=True), length)


_ESCAPE = re.compile(r"\\(.?)", re.DOTALL)
_ESCAPED = {"\\": "\\", "n": "\n"}


def _unescape(line: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) not in _ESCAPED:
            raise SnapshotError(f"a call id holds an unknown escape {m.group(0)!r}")
        return _ESCAPED[m.group(1)]

    return _ESCAPE.sub(one, line)


def _counted(name: str, ledger: Ledger[Any], length: object) -> Ledger[Any]:
    if len(ledger) != length:
        raise SnapshotError(f"ledger {name} has {len(ledger)} items, the header says {length}")
    return ledger


def _int(value: object) -> int:
    if type(value) is not int:
        raise SnapshotError(f"expected an integer, got {value!r}")
    return value


def _changed(length: int, since: int) -> range:
    return range(min(since, length) // CHUNK, (length + CHUNK - 1) // CHUNK)


def _encode_chunk(name: str, ledger: Ledger[Any], k: int) -> bytes:
    items = ledger.between(k * CHUNK, (k + 1) * CHUNK)
    if name in INT_LEDGERS:
        out = array("q", items)
        if sys.byteorder == "big":  # pragma: no cover - canonical bytes are little-endian
            out.byteswap()
        return out.tobytes()
    if name == "call_ids":
        return _lines(items)
    return canonical_json([_conv().unstructure(item) for item in items])


def _lines(ids: Sequence[str]) -> bytes:
    """Call ids one a line, UTF-8; a backslash or newline inside an id escaped (``\\\\``,
    ``\\n``), so that the usual chunk is the very bytes the state's hash joins."""
    text = "\n".join(ids)
    if "\\" in text or text.count("\n") != len(ids) - 1:
        text = "\n".join(i.replace("\\", "\\\\").replace("\n", "\\n") for i in ids)
    return text.encode()


def _dump(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _conv().unstructure(v) for k, v in sorted(values.items())}


def _load(data: dict[str, Any], cls: type[T]) -> Mapping[str, T]:
    return MappingProxyType({k: _conv().structure(v, cls) for k, v in data.items()})


# -- the cache of one journal -----------------------------------------------------------
@attrs.frozen(kw_only=True)
class Checked:
    """A stored snapshot after its checks: the state, or why it cannot be trusted."""

    version: int
    sha256: str  # as recorded beside the snapshot
    state: SessionState | None  # None unless every check passed
    problem: str | None  # why it is not trusted; None for a trusted or an older snapshot
    chained: bool  # False for a 0.1 or older-format snapshot (never trusted)
    current: bool = False  # written in FORMAT: the next save may rewrite only new chunks


class _Cached(EventLog, ReplayReads, SnapshotStore, Protocol):
    """The roles the cache uses: the head it is taken at, the hash it is checked
    against, and its own bytes."""


class Snapshots:
    """The snapshot cache of one journal: when to save, how to save, what to trust."""

    def __init__(self, recorder: _Cached, every: int, logger: logging.Logger) -> None:
        self.recorder = recorder
        self.every = every
        self._logger = logger

    def due(self, state: SessionState, last: int) -> bool:
        """Whether a commit reaching ``state`` takes a snapshot (the last was at ``last``)."""
        return bool(self.every) and state.version - last >= self.every

    def save(
        self, session_id: str, state: SessionState, since: Mapping[str, int] | None
    ) -> dict[str, int]:
        """Save ``state`` (inside the caller's transaction, after its events); returns the
        ledger lengths to pass as ``since`` next time. ``since=None`` rewrites every chunk.
        """
        version, head_hash = self.recorder.head(session_id)
        if version != state.version:
            raise JournalError(f"snapshot of {session_id!r} at {state.version}, log at {version}")
        header, chunks = encode(state, head_hash, since)
        self.recorder.save_snapshot(
            session_id, state.version, state.sha256, header, chunks, replace=since is None
        )
        return ledger_lengths(state)

    def check(self, session_id: str) -> Checked | None:
        """The session's stored snapshot, checked; ``None`` when there is none."""
        found = self.recorder.load_snapshot(session_id)
        if found is None:
            return None
        version, sha256 = found.version, found.sha256
        try:
            got = decode(found.header, found.chunks)
        except SnapshotError as exc:
            return Checked(
                version=version, sha256=sha256, state=None, problem=str(exc), chained=True
            )
        state, head_hash = got.state, got.head_hash
        problem = self._problem(session_id, version, sha256 == got.sha256, state, head_hash)
        ok = problem is None and head_hash is not None
        return Checked(
            version=version,
            sha256=sha256,
            state=state if ok else None,
            problem=problem,
            chained=head_hash is not None,
            current=got.current,
        )

    def _problem(
        self,
        session_id: str,
        version: int,
        hashes: bool,
        state: SessionState,
        head_hash: str | None,
    ) -> str | None:
        if state.version != version:
            return f"it holds version {state.version}, recorded as {version}"
        if not hashes:
            return "its state does not hash to its recorded sha256 (edited?)"
        at = self.recorder.hash_at(session_id, version)
        if at is None:
            return f"it stands for version {version}, which the log does not hold"
        if head_hash is not None and at != head_hash:
            return f"the event at version {version} is not the one it was taken at"
        return None

    def load(self, session_id: str) -> tuple[SessionState, dict[str, int] | None]:
        """The trusted snapshot state and its ledger lengths, or the empty state and
        ``None`` (replay everything; the next snapshot rewrites every chunk). A journal
        opened with ``snapshot_every=0`` neither writes nor trusts snapshots."""
        if not self.every:
            return SessionState(), None
        checked = self.check(session_id)
        if checked is None:
            return SessionState(), None
        if checked.state is not None:  # a trusted older format: the next save rewrites it
            return checked.state, ledger_lengths(checked.state) if checked.current else None
        log = bound(self._logger, session_id=session_id, version=checked.version)
        if checked.problem is not None:
            log.warning("snapshot_ignored", problem=checked.problem)
        else:
            log.info("snapshot_unchained", problem="of an older format: replaying")
        return SessionState(), None
