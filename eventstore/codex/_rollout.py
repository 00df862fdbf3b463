"""Read a Codex CLI rollout (``~/.codex/sessions/.../rollout-*.jsonl``) into typed values.

One JSON object a line, ``{timestamp, type, payload}``. What is read:

- ``session_meta``: the session id, CLI version and originator;
- ``response_item``: ``message`` (user, assistant, developer), ``reasoning`` (its
  summary, when it has one), ``function_call`` / ``custom_tool_call`` /
  ``local_shell_call`` and their outputs, linked by ``call_id``;
- ``event_msg``: ``token_count`` (the last call's prompt and output), ``turn_aborted``,
  and the exit codes of ``exec_command_end`` and of ``item_completed`` command items;
- ``compacted``: the summary, and ``replacement_history`` (what the context holds after).

Everything else Codex writes (``turn_context``, ``world_state``, the ``event_msg``
echoes of messages...) is known and passed over; a type this reader does not know is a
:class:`Note`, as is every guess it makes. Pure but for reading the file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeAlias

from eventstore.codex._items import Skipped, item_of, skip_notes
from eventstore.codex._values import Item, Note, Rollout
from reducers import InvalidEvent

Raw: TypeAlias = dict[str, Any]
MAX_BYTES = 256 * 2**20  # a larger file is refused (as a Claude Code transcript is)
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


class _NotText(InvalidEvent):
    """A line that is whole JSON but holds what no journal stores (a lone surrogate)."""


def read(path: str | Path, *, max_bytes: int = MAX_BYTES) -> Rollout:
    """The rollout at ``path``; InvalidEvent (naming the line) if it cannot be read."""
    return parse_lines(file_lines(path, max_bytes))


def parse(data: bytes) -> Rollout:
    """A rollout from its bytes (see :func:`read`)."""
    return parse_lines(enumerate(data.splitlines(keepends=True), 1))


def parse_lines(lines: Iterable[tuple[int, bytes]]) -> Rollout:
    """A rollout from its numbered lines: the boundary every reader goes through."""
    notes: list[Note] = []
    raws = _decode_all(lines, notes)
    meta = next((p for _, t, p in raws if t == "session_meta"), None)
    if meta is None:
        raise InvalidEvent("no session_meta line: not a Codex rollout")
    session_id = str(meta.get("id") or meta.get("session_id") or "")
    if not _SESSION_ID.fullmatch(session_id):
        raise InvalidEvent(f"session_meta: {session_id!r} is not a session id tierlog takes")
    notes += _other_metas(raws, session_id)
    exits = _exit_codes(raws)
    items: list[Item] = []
    skipped: Skipped = {}
    for line, kind, payload in raws:
        item = item_of(line, kind, payload, exits, skipped)
        if item is not None:
            items.append(item)
    notes += skip_notes(skipped)
    return Rollout(
        session_id=session_id,
        cli_version=str(meta.get("cli_version", "")),
        items=tuple(items),
        notes=tuple(notes),
    )


def _other_metas(raws: Iterable[tuple[int, str, Raw]], session_id: str) -> list[Note]:
    """A note for each ``session_meta`` of another session (a fork copies its parent's)."""
    out: list[Note] = []
    for line, kind, p in raws:
        other = str(p.get("id") or p.get("session_id") or "")
        if kind == "session_meta" and other != session_id:
            text = f"session_meta of session {other!r}: its items are read as {session_id!r}'s"
            out.append(Note(kind="other_session_meta", text=text, line=line))
    return out


def _decode_all(
    lines: Iterable[tuple[int, bytes]], notes: list[Note]
) -> list[tuple[int, str, Raw]]:
    """Every line as ``(number, type, payload)``; a cut-off last line is a note."""
    out: list[tuple[int, str, Raw]] = []
    pending: tuple[int, bytes] | None = None
    for number, line in lines:
        if pending is not None:
            out.append(_decode(*pending))
        pending = (number, line) if line.strip() else None
    if pending is not None:
        try:
            out.append(_decode(*pending))
        except _NotText:
            raise  # whole, so not cut off
        except InvalidEvent as exc:
            notes.append(Note(kind="cut_last_line", text=f"{exc}: skipped", line=pending[0]))
    return out


def _decode(number: int, line: bytes) -> tuple[int, str, Raw]:
    try:
        raw = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidEvent(f"line {number}: not UTF-8 text") from None
    except (ValueError, RecursionError):
        raise InvalidEvent(f"line {number}: not JSON") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise InvalidEvent(f"line {number}: not a rollout line ({{timestamp, type, payload}})")
    if b"\\ud" in line.lower() and not _text_only(raw):  # escaped surrogates: pairs only
        raise _NotText(f"line {number}: a lone surrogate is not text")
    payload = raw.get("payload")
    return number, raw["type"], payload if isinstance(payload, dict) else {}


def _text_only(raw: Raw) -> bool:
    """Whether every string in ``raw`` is text (no lone surrogate, which nothing stores)."""
    try:
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _exit_codes(raws: Iterable[tuple[int, str, Raw]]) -> Mapping[str, tuple[int, str]]:
    """Each command call's exit code, from the events Codex writes when it ends."""
    out: dict[str, tuple[int, str]] = {}
    for _, kind, p in raws:
        if kind != "event_msg":
            continue
        if p.get("type") == "exec_command_end":
            call_id, code = p.get("call_id"), p.get("exit_code")
            source = "exec_command_end"
        elif p.get("type") == "item_completed" and isinstance(p.get("item"), dict):
            item = p["item"]
            call_id, code = item.get("id"), item.get("exit_code")
            source = "item_completed"
        else:
            continue
        if isinstance(call_id, str) and type(code) is int:
            out[call_id] = (code, source)
    return out


def file_lines(path: str | Path, max_bytes: int = MAX_BYTES) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of the regular file at ``path``; InvalidEvent past ``max_bytes``."""
    try:  # O_NONBLOCK: opening a FIFO nobody writes to returns at once
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InvalidEvent(f"cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InvalidEvent(f"{path} is not a regular file: not read")
    with os.fdopen(fd, "rb") as file:
        total, number = 0, 0
        while line := file.readline(max_bytes - total + 1):
            number += 1
            total += len(line)
            if total > max_bytes:
                raise InvalidEvent(f"line {number}: the file is larger than {max_bytes:,} bytes")
            yield number, line
