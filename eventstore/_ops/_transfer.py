"""Export a session as JSON Lines; read such lines back, strictly, and import them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from eventstore._errors import IntegrityError
from eventstore._journal import Journal, check_session_id
from eventstore._ops._import import Import, Imported
from eventstore._store import GENESIS, SCHEMA_VERSION, chain_hash, from_payload
from reducers import Event, InvalidEvent, canonical_json


def export_lines(journal: Journal, session_id: str) -> Iterator[str]:
    """One JSON object a line per event: the stored row, payload as an object."""
    if not journal.has_session(session_id):
        raise InvalidEvent(f"no session {session_id!r} in {journal.recorder.location}")
    for row in journal.recorder.read(session_id):
        try:  # a row edited into something that is no event is not written out
            from_payload(row.type, row.payload)
        except InvalidEvent as exc:
            raise IntegrityError(
                f"session {session_id!r} v{row.version}: malformed stored event: {exc}"
            ) from None
        yield json.dumps(
            {
                "session_id": row.session_id,
                "version": row.version,
                "type": row.type,
                "schema_version": row.schema_version,
                "recorded_at": row.recorded_at,
                "hash": row.hash,
                "payload": json.loads(row.payload),
            },
            sort_keys=True,
            ensure_ascii=False,
        )


def read_sessions(lines: Iterable[bytes | str]) -> dict[str, list[Event]]:
    """Parse exported lines into each session's events (InvalidEvent on any bad line).

    Lines are UTF-8; each is one JSON object with no duplicate keys, integers
    that fit in 64 bits and no lone surrogates. A file without a line is refused.
    Exported lines carry ``hash`` and ``recorded_at``: each must then link to the line
    before it as the hash chain does, so an edited line is refused, not re-hashed.
    A session's lines either all carry them (an export) or none do (written by hand).
    """
    sessions: dict[str, list[Event]] = {}
    chains: dict[str, str | None] = {}
    for number, line in enumerate(lines, 1):
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else line
            if text.strip():
                _read_line(sessions, chains, text)
        except UnicodeDecodeError as exc:
            raise InvalidEvent(f"line {number}: not UTF-8 (byte {exc.start + 1})") from None
        except InvalidEvent as exc:
            raise InvalidEvent(f"line {number}: {exc}") from None
    if not sessions:
        raise InvalidEvent("nothing to import: the file holds no events")
    return sessions


_ROW_KEYS = {"session_id", "version", "type", "payload"}
_OPTIONAL_KEYS = {"schema_version", "recorded_at", "hash"}
_SUSPECT = re.compile(r"\\u[dD][89a-fA-F]|\d{19}")  # a surrogate escape, or a huge integer


def _read_line(sessions: dict[str, list[Event]], chains: dict[str, str | None], line: str) -> None:
    row = _parse(line)
    if not isinstance(row, dict) or not row.keys() >= _ROW_KEYS:
        raise InvalidEvent("need session_id, version, type and payload")
    if extra := row.keys() - _ROW_KEYS - _OPTIONAL_KEYS:
        raise InvalidEvent(f"unknown field(s) {', '.join(sorted(extra))}")
    schema = row.get("schema_version", SCHEMA_VERSION)
    if type(schema) is not int or not 1 <= schema <= SCHEMA_VERSION:
        raise InvalidEvent(f"schema version {schema!r} is not one this tierlog reads")
    if type(row["type"]) is not str or type(row["payload"]) is not dict:
        raise InvalidEvent("type must be a string and payload an object")
    events = sessions.setdefault(check_session_id(row["session_id"]), [])
    if type(row["version"]) is not int or row["version"] != len(events) + 1:
        raise InvalidEvent(f"version {row['version']!r}, expected {len(events) + 1}")
    events.append(from_payload(row["type"], row["payload"]))
    _check_link(chains, row, schema)


def _check_link(chains: dict[str, str | None], row: dict[str, Any], schema: int) -> None:
    """The line's ``hash`` links to the previous line's, as ``verify`` checks a chain."""
    sid, first = row["session_id"], row["version"] == 1
    carries = "hash" in row or "recorded_at" in row
    if not first and carries != (chains[sid] is not None):
        raise InvalidEvent("some lines of this session carry hash and recorded_at, some not")
    if not carries:
        chains[sid] = None
        return
    digest, at = row.get("hash"), row.get("recorded_at")
    if type(digest) is not str or type(at) is not str:
        raise InvalidEvent("hash and recorded_at must both be strings")
    prev = GENESIS if first else chains[sid]
    assert prev is not None  # checked above
    payload = canonical_json(row["payload"]).decode()
    if chain_hash(prev, sid, row["version"], row["type"], schema, payload, at) != digest:
        raise InvalidEvent("hash does not match the line's content and the line before it")
    chains[sid] = digest


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


def import_file(
    journal: Journal,
    file: Iterable[bytes | str],
    *,
    rename: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Imported]:
    """Import every session in ``file`` into ``journal``, re-deciding every command.

    A command the current checks decide differently is committed as they decide
    it (an unsafe compaction becomes a refusal). A later command that this makes
    impossible (a marker on the node that was refused) is skipped and reported.
    A command invalid in the file's own history, or a malformed line, aborts
    the import whole. Sessions already present with the same history are left
    unchanged.
    """
    with Import(journal.path, read_sessions(file), rename=rename) as job:
        job.decide(journal, progress)
        return job.commit(journal)
