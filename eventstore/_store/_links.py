"""A session's rows as a reader walks them, each checked to link to the one before.

``Links`` hands on ``(type, payload)`` of rows that follow a known row (the chain's
start, or a row whose hash the reader holds) while checking what a hash chain
promises: the versions follow each other, each row names its predecessor's hash,
and its own hash is that of its content. The first row that breaks it ends the walk
with :class:`ChainBroken`, after every row before it was handed on. It is the
check ``cli``'s walks make over whole rows.

``EventWalk`` is the same check on the reader's hot path (``Session.events()``,
``state`` and every commit's catch-up): it reads only what the hash needs
(``LINK_COLUMNS``: the session, the version and the previous hash are the walk's
own, and the recomputed hash covers them), hashes and decodes each row in one loop,
and reads the whole row again only where the fast check fails, to word why.
``verify``'s ``ChainWalk`` checks more: canonical payloads, every decision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from eventstore._errors import ChainBroken, IntegrityError, UnreadableRow
from eventstore._store._chain import Recorded, _middle, _sha256, _text, check_row
from eventstore._store._codec import FAST_DECODERS, from_payload
from eventstore._store._rows import Head
from reducers import Event, InvalidEvent
from reducers._json import fast_loads

LINK_COLUMNS = "type, schema_version, payload, recorded_at, hash"
"""What a walk reads of a row: what its hash covers that the walk does not know."""

LinkRow = tuple[str, int, str, str, str]
"""``(type, schema_version, payload, recorded_at, hash)`` of a stored row."""


class _Rows(Protocol):
    def read(
        self, session_id: str, *, start: int = 1, stop: int | None = None
    ) -> Iterator[Recorded]: ...


class Links:
    """``(type, payload)`` of ``rows``, which follow ``head`` (the version and hash of
    the row before them); ``head`` follows the walk."""

    def __init__(self, session_id: str, rows: Iterable[Recorded], head: Head) -> None:
        self.session_id = session_id
        self.head = head
        self._rows = rows

    def __iter__(self) -> Iterator[tuple[str, str]]:
        """The rows' ``(type, payload)``: the fast path written out (the hashed bytes a
        commit's rows share encoded once, each type's text once); on any doubt
        ``check_row`` decides, and words the problem."""
        version, prev = self.head
        sha, key, middle, types = _sha256, None, "", dict[str, str]()
        try:
            for row in self._rows_read():
                _, session_id, number, type_name, schema, payload, at, prev_hash, digest = row
                try:
                    if key != (at, schema):
                        key, middle = (at, schema), _middle(session_id, at, schema)
                    typed = types.get(type_name)
                    if typed is None:
                        typed = types[type_name] = _text(type_name)
                    body = f'{prev}{{"payload":{payload}{middle}{typed},"version":{number}}}'
                    linked = (
                        number == version + 1
                        and prev_hash == prev
                        and sha(body.encode()).hexdigest() == digest
                    )
                except Exception:  # a value of another type than its column's
                    linked = False
                if not linked:
                    self._check(row, prev, version + 1)
                version, prev = version + 1, digest
                yield type_name, payload
        finally:  # where the walk got to, however it ended
            self.head = Head(version, prev)

    def _rows_read(self) -> Iterator[Recorded]:
        """The rows; one the database cannot hand over is where the chain breaks."""
        try:
            yield from self._rows
        except UnreadableRow as exc:
            problem = "a stored text is not UTF-8"
            raise ChainBroken(self.session_id, exc.version, problem) from None

    def _check(self, row: Recorded, prev: str, expected: int) -> None:
        """ChainBroken unless ``row`` links after ``prev`` (the slow path words why)."""
        event, problem = check_row(row, prev, expected)
        if event is None:
            number = row.version if type(row.version) is int else expected
            raise ChainBroken(self.session_id, min(number, expected), problem)


def link_rows_of(recorder: _Rows, session_id: str, start: int, stop: int) -> Iterator[LinkRow]:
    """Rows ``start..stop`` of a session as ``LinkRow``: the backend's ``read_links``
    when it has one (only those columns read), else its whole rows, cut."""
    read_links: Callable[..., Iterator[LinkRow]] | None = getattr(recorder, "read_links", None)
    if read_links is not None:
        return read_links(session_id, start=start, stop=stop)
    rows = recorder.read(session_id, start=start, stop=stop)
    return ((r.type, r.schema_version, r.payload, r.recorded_at, r.hash) for r in rows)


class EventWalk:
    """The events of ``rows`` (``LinkRow``), which follow ``head``, each checked to link
    as ``Links`` checks it; ``head`` follows the walk. ``whole(version)`` reads the
    stored rows from ``version`` on, whole: where the fast check fails, the first of
    them is checked by ``check_row``, which words the problem (or passes it). With
    ``stop``, rows that end before it are a break too (the version column is not
    read: a row stored under another version is found by position)."""

    def __init__(
        self,
        session_id: str,
        rows: Iterable[LinkRow],
        head: Head,
        whole: Callable[[int], Iterable[Recorded]],
        stop: int | None = None,
    ) -> None:
        self.session_id = session_id
        self.head = head
        self._rows = rows
        self._whole = whole
        self._stop = stop

    def __iter__(self) -> Iterator[Event]:
        """Hash, check and decode each row in one loop (the shared hashed bytes encoded
        once a commit, each type's text once; orjson and the fast decoders)."""
        version, prev = self.head
        sha, loads, decoders, session_id = _sha256, fast_loads, FAST_DECODERS, self.session_id
        last_at: object = None
        last_schema: object = None
        middle, types = "", dict[str, str]()
        try:
            for type_name, schema, payload, at, digest in self._rows:
                number = version + 1
                try:
                    if at != last_at or schema != last_schema:
                        last_at, last_schema = at, schema
                        middle = _middle(session_id, at, schema)
                    typed = types.get(type_name)
                    if typed is None:
                        typed = types[type_name] = _text(type_name)
                    body = f'{prev}{{"payload":{payload}{middle}{typed},"version":{number}}}'
                    linked = sha(body.encode()).hexdigest() == digest
                except Exception:  # a value of another type than its column's
                    linked = False
                if not linked:
                    digest = self._check(number, prev)
                version, prev, event = number, digest, None
                decode = decoders.get(type_name)
                if decode is not None:
                    try:
                        data = loads(payload)
                        event = decode(data) if type(data) is dict else None
                    except Exception:  # from_payload words every failure
                        event = None
                yield event if event is not None else self._decoded(type_name, payload)
            if self._stop is not None and version < self._stop:
                self._check(version + 1, prev)  # words why the rows end early
                raise ChainBroken(self.session_id, version + 1, "the row is missing")
        except UnreadableRow as exc:  # a row the database cannot hand over: a break
            raise ChainBroken(self.session_id, exc.version, "a stored text is not UTF-8") from None
        finally:  # where the walk got to, however it ended
            self.head = Head(version, prev)

    def _decoded(self, type_name: str, payload: str) -> Event:
        """``from_payload``; a linked row that holds no event is an IntegrityError."""
        try:
            return from_payload(type_name, payload)
        except InvalidEvent as exc:
            raise IntegrityError(
                f"session {self.session_id!r}: malformed stored event: {exc}"
            ) from None

    def _check(self, version: int, prev: str) -> str:
        """The hash of the row at ``version`` if ``check_row`` finds it links after
        ``prev``; else ChainBroken naming why (the whole row read again)."""
        row = next(iter(self._whole(version)), None)
        if row is None:
            raise ChainBroken(self.session_id, version, "the row is missing")
        event, problem = check_row(row, prev, version)
        if event is None:
            number = row.version if type(row.version) is int else version
            raise ChainBroken(self.session_id, min(number, version), problem)
        return row.hash
