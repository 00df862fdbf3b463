"""A session's rows as a reader walks them, each checked to link to the one before.

``Links`` hands on ``(type, payload)`` of rows that follow a known row (the chain's
start, or a row whose hash the reader holds) while checking what a hash chain
promises: the versions follow each other, each row names its predecessor's hash,
and its own hash is that of its content. The first row that breaks it ends the walk
with :class:`ChainBroken`, after every row before it was handed on. It is the
check ``Session.events()``, ``state`` and every commit's catch-up make (``verify``'s
``ChainWalk`` checks more: canonical payloads, every decision).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from eventstore._errors import ChainBroken, UnreadableRow
from eventstore._store._chain import Recorded, _middle, _sha256, _text, check_row
from eventstore._store._rows import Head


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
