"""Reading exported JSON Lines back, strictly: each line an event of a session, each
session closed by its trailer.

Lines are UTF-8; each is one JSON object with no duplicate keys, integers that fit
in 64 bits and no lone surrogates. An event line carries ``session_id``,
``version``, ``type`` and ``payload`` (an export adds ``schema_version``,
``recorded_at`` and ``hash``: each must then link to the line before it as the hash
chain does, so an edited line is found, not re-hashed). A session's last line is
its trailer, ``{"end_of_session": ID, "events": N, "hash": H}``: N event lines came
before it and the last of them has hash H (``null`` for lines without hashes). A
file cut at a line boundary has no trailer, and is refused; a file written by
tierlog 0.2 has none either (``require_trailer=False`` reads it, and says so).

What is wrong with a well-formed line is a *finding* (a hash that does not link,
the findings an export carried in its trailer): it is collected per session and
the importer decides (``--allow-findings``). A malformed line is an InvalidEvent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import attrs

from eventstore._journal import check_session_id
from eventstore._store import GENESIS, SCHEMA_VERSION, chain_hash, from_payload
from reducers import Event, InvalidEvent, canonical_json

TRAILER = "end_of_session"
_ROW_KEYS = {"session_id", "version", "type", "payload"}
_OPTIONAL_KEYS = {"schema_version", "recorded_at", "hash"}
_TRAILER_KEYS = {TRAILER, "events", "hash"}
_SUSPECT = re.compile(r"\\u[dD][89a-fA-F]|\d{19}")  # a surrogate escape, or a huge integer


@attrs.frozen(kw_only=True)
class FileSession:
    """One session of a file: its events, its findings, and whether a trailer closed it."""

    events: tuple[Event, ...]
    findings: tuple[str, ...]
    trailer: bool


def read_file(
    lines: Iterable[bytes | str], *, require_trailer: bool = True
) -> dict[str, FileSession]:
    """Parse exported lines into each session (InvalidEvent on any malformed line, and
    on a session without its trailer when ``require_trailer``)."""
    reader = _Reader()
    for number, line in enumerate(lines, 1):
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else line
            if text.strip():
                reader.line(number, text)
        except UnicodeDecodeError as exc:
            raise InvalidEvent(f"line {number}: not UTF-8 (byte {exc.start + 1})") from None
        except InvalidEvent as exc:
            raise InvalidEvent(f"line {number}: {exc}") from None
    return reader.done(require_trailer)


class _Session:
    """What the reader knows of one session so far."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.findings: list[str] = []
        self.prev: str | None = GENESIS  # the last line's hash; None: lines without hashes
        self.closed = False
        self.last = 0  # the line number of its last event


class _Reader:
    def __init__(self) -> None:
        self.sessions: dict[str, _Session] = {}

    def line(self, number: int, text: str) -> None:
        row = _parse(text)
        if not isinstance(row, dict):
            raise InvalidEvent("not a tierlog line: a JSON object is expected")
        if TRAILER in row:
            self._trailer(row)
        else:
            self._event(number, row)

    def _event(self, number: int, row: dict[str, Any]) -> None:
        if not row.keys() >= _ROW_KEYS:
            raise InvalidEvent("need session_id, version, type and payload")
        if extra := row.keys() - _ROW_KEYS - _OPTIONAL_KEYS:
            raise InvalidEvent(f"unknown field(s) {', '.join(sorted(extra))}")
        schema = row.get("schema_version", SCHEMA_VERSION)
        if type(schema) is not int or not 1 <= schema <= SCHEMA_VERSION:
            raise InvalidEvent(f"schema version {schema!r} is not one this tierlog reads")
        if type(row["type"]) is not str or type(row["payload"]) is not dict:
            raise InvalidEvent("type must be a string and payload an object")
        sid = check_session_id(row["session_id"])
        session = self.sessions.setdefault(sid, _Session())
        if session.closed:
            raise InvalidEvent(f"session {sid!r} goes on after its trailer")
        if type(row["version"]) is not int or row["version"] != len(session.events) + 1:
            raise InvalidEvent(f"version {row['version']!r}, expected {len(session.events) + 1}")
        session.events.append(from_payload(row["type"], row["payload"]))
        session.last = number
        _link(session, row, schema, number)

    def _trailer(self, row: dict[str, Any]) -> None:
        if row.keys() - {"findings"} != _TRAILER_KEYS:
            raise InvalidEvent(f"a trailer has {', '.join(sorted(_TRAILER_KEYS))} (and findings)")
        sid, count, digest = row[TRAILER], row["events"], row["hash"]
        session = self.sessions.get(sid) if isinstance(sid, str) else None
        if session is None or session.closed:
            raise InvalidEvent(f"a trailer for session {sid!r}, which has no lines before it")
        if type(count) is not int or count != len(session.events):
            raise InvalidEvent(
                f"session {sid!r}: the trailer counts {count!r} events, the file holds"
                f" {len(session.events)} (lines lost or added)"
            )
        if digest != session.prev:
            raise InvalidEvent(
                f"session {sid!r}: the trailer's head hash is not the last line's"
                " (the session's end was edited)"
            )
        session.findings += _carried(row.get("findings", []))
        session.closed = True

    def done(self, require_trailer: bool) -> dict[str, FileSession]:
        if not self.sessions:
            raise InvalidEvent("nothing to import: the file holds no events")
        open_ = [(sid, s.last) for sid, s in self.sessions.items() if not s.closed]
        if open_ and require_trailer:
            sid, last = open_[0]
            raise InvalidEvent(
                f"session {sid!r} has no trailer after its last line (line {last}): the"
                " file was cut short, or written by tierlog 0.2, which wrote none"
                " (--no-trailer imports such a file; a cut one cannot be told from it)"
            )
        return {
            sid: FileSession(events=tuple(s.events), findings=tuple(s.findings), trailer=s.closed)
            for sid, s in self.sessions.items()
        }


def _carried(findings: object) -> list[str]:
    """The findings a trailer carries (an export made with ``--allow-findings``)."""
    if not isinstance(findings, list) or not all(isinstance(f, str) and f for f in findings):
        raise InvalidEvent("a trailer's findings are a list of texts")
    return [f"the export carried: {f}" for f in findings]


def _link(session: _Session, row: dict[str, Any], schema: int, number: int) -> None:
    """The line's ``hash`` links to the previous line's, as ``verify`` checks a chain;
    a line that does not is a finding, and the chain goes on from its hash."""
    first = row["version"] == 1
    carries = "hash" in row or "recorded_at" in row
    if not first and carries != (session.prev is not None):
        raise InvalidEvent("some lines of this session carry hash and recorded_at, some not")
    if not carries:
        session.prev = None
        return
    digest, at = row.get("hash"), row.get("recorded_at")
    if type(digest) is not str or type(at) is not str:
        raise InvalidEvent("hash and recorded_at must both be strings")
    prev = session.prev if session.prev is not None else GENESIS
    payload = canonical_json(row["payload"]).decode()
    sid, version = row["session_id"], row["version"]
    if chain_hash(prev, sid, version, row["type"], schema, payload, at) != digest:
        session.findings.append(
            f"chain: line {number} (v{version}): its hash does not match its content and"
            " the line before it (edited after it was exported, or exported from a"
            " tampered journal)"
        )
    session.prev = digest


def _parse(line: str) -> object:
    """One JSON value; duplicate keys, deep nesting and out-of-range values are errors."""
    try:
        value = json.loads(line, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InvalidEvent(f"not JSON ({exc.msg})") from None
    except RecursionError:
        raise InvalidEvent("not a tierlog line: nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InvalidEvent(f"not a tierlog line: {exc}") from None
    if _SUSPECT.search(line):
        _check_values(value)
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        keys = [k for k, _ in pairs]
        twice = next(k for k in keys if keys.count(k) > 1)
        raise InvalidEvent(f"duplicate key {twice!r}")
    return found


def _check_values(value: object) -> None:
    """Refuse integers beyond 64 bits and strings that are not valid Unicode (iteratively)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
        elif type(item) is int and not -(2**63) <= item < 2**63:
            raise InvalidEvent(f"integer {item} does not fit in 64 bits")
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidEvent(f"string {item[:40]!r} holds a lone surrogate") from None
