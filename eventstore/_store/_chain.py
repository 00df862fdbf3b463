"""The per-session hash chain, the same for every backend.

``hash = sha256(prev_hash + canonical event bytes)``: a recorder links new rows
with ``link_rows`` and anyone can re-walk stored rows with ``ChainWalk``, which
decodes each event once and stops at the first broken link.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol, cast

import attrs

from eventstore._errors import ConcurrencyError, IntegrityError, UnreadableRow
from eventstore._store._codec import (
    SCHEMA_VERSION,
    fast_decoder,
    from_fast_data,
    from_payload,
    unreadable,
    unstructurer,
)
from reducers import Event, InvalidEvent, canonical_bytes, canonical_json
from reducers._json import SORT as _SORT
from reducers._json import fast_loads
from reducers._json import raw_dumps as _dumps

GENESIS = "0" * 64
_sha256 = hashlib.sha256
_text = json.encoder.encode_basestring  # the string encoding canonical JSON uses


class Recorded(NamedTuple):
    """One stored event row, as every backend stores it (a named tuple: a verify reads
    a million of them)."""

    seq: int
    session_id: str
    version: int
    type: str
    schema_version: int
    payload: str
    recorded_at: str
    prev_hash: str
    hash: str

    @property
    def event(self) -> Event:
        """The decoded event (raises :class:`InvalidEvent` for a malformed row)."""
        return from_payload(self.type, self.payload)


@attrs.frozen(kw_only=True)
class ChainProblem:
    """The first row of a session that fails the integrity walk."""

    session_id: str
    version: int
    problem: str


def _middle(session_id: str, recorded_at: str, schema_version: int) -> str:
    """The hashed bytes between a row's payload and its type's text, as text: the
    parts of ``hash_bytes`` that rows of one session and one commit share."""
    return (
        f',"recorded_at":{_text(recorded_at)},"schema_version":{int(schema_version)},'
        f'"session_id":{_text(session_id)},"type":'
    )


def chain_hash(
    prev: str,
    session_id: str,
    version: int,
    type_name: str,
    schema_version: int,
    payload: str,
    recorded_at: str,
) -> str:
    """``sha256(prev_hash + canonical event bytes)``: ``prev.encode() + hash_bytes(...)``,
    formatted in one step (``link_rows`` and ``ChainWalk`` write the same out inline)."""
    middle = _middle(session_id, recorded_at, schema_version)
    body = f'{prev}{{"payload":{payload}{middle}{_text(type_name)},"version":{int(version)}}}'
    return _sha256(body.encode()).hexdigest()


def link_rows(
    session_id: str, version: int, prev: str, events: Sequence[Event], recorded_at: str
) -> list[tuple[str, int, str, int, str, str, str, str]]:
    """The rows that append ``events`` after ``version`` (hash ``prev``), as plain
    tuples in column order: ``(session_id, version, type, schema_version, payload,
    recorded_at, prev_hash, hash)`` (what a recorder inserts).

    ``to_payload`` and ``chain_hash`` written out for a batch: the shared parts of the
    hashed bytes are encoded once, and each event type's text and encoder looked up
    once."""
    rows = []
    middle, sha, dumps = _middle(session_id, recorded_at, SCHEMA_VERSION), _sha256, _dumps
    kinds: dict[type, tuple[str, str, Callable[[Event], Any]]] = {}
    for event in events:
        kind = kinds.get(type(event))
        if kind is None:
            name = type(event).__name__
            kind = kinds[type(event)] = (name, _text(name), unstructurer(type(event)))
        name, typed, unstructure = kind
        data = unstructure(event)
        try:
            payload = dumps(data, option=_SORT).decode()
        except TypeError:  # what orjson does not take (an integer beyond 64 bits)
            payload = _fallback(data)
        version += 1
        digest = sha(
            f'{prev}{{"payload":{payload}{middle}{typed},"version":{version}}}'.encode()
        ).hexdigest()
        rows.append((session_id, version, name, SCHEMA_VERSION, payload, recorded_at, prev, digest))
        prev = digest
    return rows


def _fallback(data: Any) -> str:
    """The payload orjson did not write, by the standard library; text UTF-8 cannot hold
    (a lone surrogate, which every event's own check refuses: only an event changed
    after its checks carries one) is InvalidEvent, and nothing is written."""
    try:
        return canonical_json(data).decode()
    except UnicodeEncodeError:
        raise InvalidEvent(
            "an event holds text that is not valid Unicode (a lone surrogate):"
            " was it changed after its checks ran?"
        ) from None


CHAIN_COLUMNS = "version, type, schema_version, payload, recorded_at, prev_hash, hash"
"""What ``verify``'s walk reads of a row: all of it but ``seq`` and the session (the
read names the session, and the walk hashes that)."""

ChainRow = tuple[int, str, int, str, str, str, str]
"""``(version, type, schema_version, payload, recorded_at, prev_hash, hash)``."""
_CHAIN_WIDTH = 7


class ChainWalk:
    """Iterate a session's events while walking its hash chain; stops at the first bad row.

    ``rows`` are the session's whole rows (``Recorded``) or its ``ChainRow``s (what
    ``whole_rows`` reads); either way the hash covers the walk's ``session_id``.
    After iteration, ``problem`` is the first broken link, or ``None``.
    """

    def __init__(self, session_id: str, rows: Iterable[Recorded] | Iterable[ChainRow]) -> None:
        self._rows = rows
        self.session_id = session_id
        self.problem: ChainProblem | None = None

    def __iter__(self) -> Iterator[Event]:
        """The rows' events: ``check_row``'s fast path written out (orjson decodes and
        re-encodes each payload, the hash's fixed parts are encoded once per commit
        time, each type's text and decoder looked up once a row); on any doubt
        ``check_row`` decides, and words the problem."""
        session_id, prev, expected = self.session_id, GENESIS, 1
        loads, dumps, sort, sha = fast_loads, _dumps, _SORT, _sha256
        SCHEMA = SCHEMA_VERSION  # noqa: N806 - a local of the hot loop
        at_key, schema_key, middle = None, None, ""
        kinds: dict[str, tuple[str, Callable[[dict[str, Any]], Any] | None]] = {}
        try:
            for row in _chain_rows(session_id, self._rows):
                version, type_name, schema_version, text, at, prev_hash, digest = row
                event: Event | None = None
                try:  # a value of another type than its column's (a tampered file) raises
                    if (
                        type(version) is int
                        and version == expected
                        and prev_hash == prev
                        and 1 <= schema_version <= SCHEMA
                    ):
                        data = loads(text)
                        if dumps(data, option=sort) == text.encode():
                            if at != at_key or schema_version != schema_key:
                                if type(at) is not str:
                                    raise TypeError(at)
                                at_key, schema_key = at, schema_version
                                middle = _middle(session_id, at, schema_version)
                            kind = kinds.get(type_name)
                            if kind is None:
                                if type(type_name) is not str:
                                    raise TypeError(type_name)
                                kind = (_text(type_name), fast_decoder(type_name))
                                kinds[type_name] = kind
                            typed, decode = kind
                            body = f'{prev}{{"payload":{text}{middle}{typed},"version":{version}}}'
                            if sha(body.encode()).hexdigest() == digest:
                                event = (
                                    decode(data)
                                    if decode is not None and type(data) is dict
                                    else from_fast_data(type_name, data)
                                )
                except Exception:  # check_row words every failure
                    event = None
                if event is None:
                    whole = row.whole if type(row) is _Whole else Recorded(0, session_id, *row)
                    event, problem = check_row(whole, prev, expected)
                    if event is None:
                        self.problem = ChainProblem(  # a missing row is named, not its successor
                            session_id=session_id,
                            version=version
                            if type(version) is int and version < expected
                            else expected,
                            problem=problem,
                        )
                        return
                yield event
                prev, expected = digest, expected + 1
        except UnreadableRow as exc:  # a row the database cannot hand over ends the walk
            self.problem = ChainProblem(
                session_id=session_id,
                version=min(exc.version, expected),
                problem="a stored text is not UTF-8 (edited by hand?)"
                if exc.version == expected
                else f"version sequence broken: expected {expected}, found {exc.version}"
                " (a row whose text is not UTF-8)",
            )


class _Whole(tuple[Any, ...]):
    """A whole row of another session than the walk's (or of none, in a tampered file)
    as a ``ChainRow`` the fast path refuses (its ``prev_hash`` is ``None``), with the
    row itself for ``check_row``."""

    whole: Recorded


def _chain_rows(
    session_id: str, rows: Iterable[Recorded] | Iterable[ChainRow]
) -> Iterator[ChainRow]:
    """``rows`` as ``ChainRow``s (the first row's width tells which kind they are):
    whole rows of the walk's session lose ``seq`` and the session."""
    read: Iterator[tuple[Any, ...]] = iter(rows)
    first = next(read, None)
    if first is None:
        return iter(())
    rest = itertools.chain((first,), read)
    if len(first) == _CHAIN_WIDTH:
        return cast(Iterator[ChainRow], rest)
    return (row[2:] if row[1] == session_id else _whole(row) for row in rest)


def _whole(row: tuple[Any, ...]) -> ChainRow:
    whole = _Whole((*row[2:7], None, row[8]))
    whole.whole = Recorded._make(row)
    return cast(ChainRow, whole)


_TEXT_COLUMNS = ("session_id", "type", "payload", "recorded_at", "prev_hash", "hash")


def _mistyped(row: Recorded) -> str:
    """Why a value of ``row`` is not of its column's type (only a file whose schema was
    edited can hold one), or ``""``."""
    for name in ("version", "schema_version"):
        if type(getattr(row, name)) is not int:
            return f"{name} is {getattr(row, name)!r}, not an integer (edited by hand?)"
    for name in _TEXT_COLUMNS:
        if type(getattr(row, name)) is not str:
            return f"{name} is {getattr(row, name)!r}, not text (edited by hand?)"
    return ""


def check_row(row: Recorded, prev: str, expected: int) -> tuple[Event | None, str]:
    """The row's event if it links correctly after ``prev``, else ``None`` and why."""
    mistyped = _mistyped(row)
    if mistyped:
        return None, mistyped
    if row.version != expected:
        return None, f"version sequence broken: expected {expected}, found {row.version}"
    if row.prev_hash != prev:
        return None, "prev_hash does not match the previous event's hash"
    if not 1 <= row.schema_version <= SCHEMA_VERSION:
        return None, (
            f"schema_version {row.schema_version}: this tierlog reads events of schema"
            f" 1 to {SCHEMA_VERSION}"
        )
    try:  # the fast decoder and encoder; on any doubt the standard path below decides
        data = fast_loads(row.payload)
        if canonical_bytes(data) == row.payload.encode() and row.hash == chain_hash(
            prev, *row[1:5], row.payload, row.recorded_at
        ):
            event = from_fast_data(row.type, data)
            if event is not None:
                return event, ""
    except Exception:  # the standard path below words every failure
        pass
    return _check_row(row, prev)


def _check_row(row: Recorded, prev: str) -> tuple[Event | None, str]:
    """``check_row`` past the links, with the standard library's decoder and encoder."""
    try:
        data = json.loads(row.payload)
    except json.JSONDecodeError:
        return None, "payload is not JSON"
    except (ValueError, RecursionError) as exc:  # JSON text, but no value Python can hold
        return None, unreadable(exc)
    try:
        canonical = canonical_json(data).decode()
    except UnicodeEncodeError:  # an escaped lone surrogate: no UTF-8 text holds it
        return None, "payload holds a lone surrogate (edited by hand?)"
    if canonical != row.payload:
        return None, "payload is not in canonical form (edited by hand?)"
    digest = chain_hash(
        prev,
        row.session_id,
        row.version,
        row.type,
        row.schema_version,
        row.payload,
        row.recorded_at,
    )
    if digest != row.hash:
        return None, "hash does not match the event's content"
    try:
        return from_payload(row.type, data), ""
    except InvalidEvent as exc:
        return None, f"payload does not decode: {exc}"


class _Rows(Protocol):
    def read(self, session_id: str) -> Iterator[Recorded]: ...


def whole_rows(recorder: _Rows, session_id: str) -> Iterable[Recorded] | Iterable[ChainRow]:
    """A session's rows for a ``ChainWalk``: the backend's ``read_chain`` when it has
    one (``CHAIN_COLUMNS`` as plain tuples: no ``seq``, no session, no ``Recorded``
    built a row), else ``read``."""
    read_chain: Callable[[str], Iterable[ChainRow]] | None = getattr(recorder, "read_chain", None)
    return read_chain(session_id) if read_chain is not None else recorder.read(session_id)


def check_chain(recorder: _Rows, session_id: str) -> ChainProblem | None:
    """The first version whose sequence, payload or hash is wrong, or ``None``."""
    walk = ChainWalk(session_id, whole_rows(recorder, session_id))
    for _ in walk:
        pass
    return walk.problem


def check_links(session_id: str, head: tuple[int, str], rows: Sequence[Recorded]) -> int:
    """Check that ``rows`` (recorded elsewhere) continue a session whose head is
    ``head`` (version, hash), link by link; returns the version they reach.

    A first row at another version is a :class:`ConcurrencyError` (the head moved);
    a row that does not link, or whose hash or payload is wrong, an IntegrityError.
    """
    prev_version, prev = head
    for row in rows:
        mistyped = _mistyped(row)
        if mistyped:
            raise IntegrityError(f"session {session_id!r}: a row's {mistyped}")
        if row.session_id != session_id:
            raise IntegrityError(f"a row of session {row.session_id!r} among {session_id!r}'s")
        if row.version != prev_version + 1 and prev_version == head[0]:
            raise ConcurrencyError(
                f"session {session_id!r} is at version {head[0]}, rows start at {row.version}"
            )
        event, problem = check_row(row, prev, prev_version + 1)
        if event is None:
            raise IntegrityError(f"session {session_id!r} v{row.version}: {problem}")
        prev_version, prev = row.version, row.hash
    return prev_version
