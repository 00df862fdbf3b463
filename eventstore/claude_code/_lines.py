"""The lines of a Claude Code transcript, read safely and decoded into entries.

What a hostile file cannot do here: make the reader wait forever (a FIFO, a
device: only regular files are read), grow it without bound (at most
``MAX_BYTES``, read a line at a time), or raise anything but InvalidEvent naming
its line (bytes that are not UTF-8, a number too long to convert, nesting deeper
than ``MAX_DEPTH``, a lone surrogate). An entry repeated (same ``uuid``, or the
same line without one) counts once, with a note.

Every JSON object is kept as an entry, whatever its type, so that the parent chain
runs through types tierlog maps to nothing (``attachment``, ``progress``, ...) and
through types it does not know yet; an unknown type is noted once, at its first
line. A *note* is a warning the journal records (a ``Noted`` event, placed after
the last turn before its line); a plain warning (a file still being written, say)
is only printed.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeAlias

import attrs

from reducers import InvalidEvent

KNOWN_TYPES = frozenset(
    {"user", "assistant", "system", "progress", "file-history-snapshot", "queue-operation"}
    | {"summary", "custom-title", "agent-name", "tag"}  # titles and names a session was given
    | {"attachment"}  # 2.1: hook context, reminders, CLAUDE.md, files, in the parent chain
    | {"last-prompt", "cost-state", "mode", "tools-used", "atis-latch", "pr-link"}
    | {"api-request", "api-request-shape", "api-request-blob"}  # 2.1.3xx bookkeeping
)
READ_TYPES = frozenset({"user", "assistant", "system", "queue-operation"})  # mapped to events
MAX_BYTES = 256 * 2**20  # a file larger than this is refused (about 4x this in memory)
MAX_DEPTH = 100  # JSON nesting (real entries: 7 at most); deeper is refused
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
    stat.S_IFSOCK: "a socket",
}

Raw: TypeAlias = dict[str, Any]


@attrs.frozen(kw_only=True)
class Note:
    """A warning the journal records: which heuristic, at which line, about how many."""

    kind: str
    line: int
    text: str
    count: int = 1


class Warnings:
    """Warnings in the order first given; those of one ``kind`` folded into the first.
    :meth:`note` also records one for the journal (:attr:`notes`)."""

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._kinds: dict[str, int] = {}
        self._more: Counter[str] = Counter()
        self.notes: list[Note] = []

    def append(self, text: str, kind: str | None = None) -> None:
        """Add ``text``; a later one of the same ``kind`` only counts as one more."""
        if kind is not None and kind in self._kinds:
            self._more[kind] += 1
            return
        if kind is not None:
            self._kinds[kind] = len(self._texts)
        self._texts.append(text)

    def note(self, kind: str, line: int, text: str, *, count: int = 1, fold: str = "") -> None:
        """A warning ``line N: text`` the journal records as a note of ``kind``; with
        ``fold``, only the first of that fold is recorded (the rest are counted)."""
        if fold and fold in self._kinds:
            self._more[fold] += 1
            return
        self.append(f"line {line}: {text}", kind=fold or None)
        self.notes.append(Note(kind=kind, line=line, text=text, count=count))

    def all(self) -> tuple[str, ...]:
        """Every warning, a folded kind's first one saying how many more there were."""
        texts = list(self._texts)
        for kind, at in self._kinds.items():
            if self._more[kind]:
                texts[at] += f" (and {self._more[kind]:,} more such lines)"
        return tuple(texts)


@attrs.frozen(kw_only=True)
class Entry:
    """One decoded line of a known entry type."""

    line: int
    raw: Raw

    @property
    def type(self) -> str:
        """The entry's ``type``."""
        return str(self.raw.get("type"))

    @property
    def uuid(self) -> str | None:
        """The entry's ``uuid``, if it has a string one."""
        value = self.raw.get("uuid")
        return value if isinstance(value, str) else None

    @property
    def message_id(self) -> str | None:
        """The API message id of a user or assistant entry."""
        value = self.message.get("id")
        return value if isinstance(value, str) else None

    @property
    def message(self) -> Raw:
        """The entry's ``message`` object (empty if it has none)."""
        message = self.raw.get("message")
        return message if isinstance(message, dict) else {}


def file_lines(path: str | Path, max_bytes: int = MAX_BYTES) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of the regular file at ``path``; InvalidEvent past ``max_bytes``."""
    try:  # O_NONBLOCK: opening a FIFO nobody writes to returns at once
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InvalidEvent(f"cannot read {path}: {exc.strerror}") from None
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind != stat.S_IFREG:
        os.close(fd)
        raise InvalidEvent(f"{_KINDS.get(kind, 'a special file')}, not a regular file: not read")
    with os.fdopen(fd, "rb") as file:
        total, number = 0, 0
        while line := file.readline(max_bytes - total + 1):
            number += 1
            total += len(line)
            if total > max_bytes:
                raise InvalidEvent(
                    f"line {number}: the file is larger than {max_bytes:,} bytes, the most"
                    " a transcript may be: not read"
                )
            yield number, line


def entries(lines: Iterable[tuple[int, bytes]], warnings: Warnings) -> list[Entry]:
    """The entries of known types, in file order, each once (see the module doc)."""
    found: list[Entry] = []
    seen = _Seen()
    unknown: dict[str, list[int]] = {}
    previous: tuple[int, bytes] | None = None
    for item in ((n, line) for n, line in lines if line.strip()):
        if previous is not None:
            _keep(previous, False, found, seen, unknown, warnings)
        previous = item
    if previous is None:
        raise InvalidEvent("empty file: not a Claude Code transcript")
    _keep(previous, True, found, seen, unknown, warnings)
    for kind, numbers in unknown.items():
        text = f"unknown entry type {kind}: mapped to nothing, kept for the parent chain"
        warnings.note("unknown_entry", numbers[0], text)
    seen.warn(warnings)
    return found


def _keep(
    item: tuple[int, bytes],
    last: bool,
    found: list[Entry],
    seen: _Seen,
    unknown: dict[str, list[int]],
    warnings: Warnings,
) -> None:
    number, line = item
    raw = decode(number, line, last=last, warnings=warnings)
    if raw is None:
        return
    kind = raw.get("type")
    if not (isinstance(kind, str) and kind in KNOWN_TYPES):
        unknown.setdefault(repr(kind), []).append(number)
    entry = Entry(line=number, raw=raw)
    if seen.first(entry, line):
        found.append(entry)


@attrs.define
class _Seen:
    """The uuids (and, for entries without one, the lines) read so far."""

    uuids: dict[str, int] = attrs.field(factory=dict)
    lines: set[bytes] = attrs.field(factory=set)
    repeats: list[tuple[int, str]] = attrs.field(factory=list)

    def first(self, entry: Entry, line: bytes) -> bool:
        """Whether ``entry`` is not a repeat of one read before (and remember it)."""
        if entry.uuid is None and entry.type not in READ_TYPES:
            return True  # bookkeeping Claude Code may write twice: nothing is read from it
        if entry.uuid is None:
            digest = hashlib.blake2b(line.strip(), digest_size=16).digest()
            if digest in self.lines:
                self.repeats.append((entry.line, "an identical line"))
                return False
            self.lines.add(digest)
            return True
        at = self.uuids.setdefault(entry.uuid, entry.line)
        if at != entry.line:
            self.repeats.append((entry.line, f"uuid {entry.uuid!r} of line {at}"))
        return at == entry.line

    def warn(self, warnings: Warnings) -> None:
        for line, what in self.repeats:
            warnings.note("repeat", line, f"an entry repeating {what} skipped", fold="repeat")


def decode(number: int, line: bytes, *, last: bool, warnings: Warnings) -> Raw | None:
    """One line as a JSON object; ``None`` (and a warning) for a cut-off last line, whether
    cut between characters or inside one."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        if last:  # a file read while a line was written, between the bytes of a character
            return _cut(number, warnings)
        raise InvalidEvent(f"line {number}: not UTF-8 text") from None
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        if last:
            return _cut(number, warnings)
        problem = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise InvalidEvent(f"line {number}: not JSON ({problem})") from None
    except ValueError:  # int() of a literal past sys.get_int_max_str_digits()
        digits = sys.get_int_max_str_digits()
        raise InvalidEvent(f"line {number}: a number with more than {digits:,} digits") from None
    if not isinstance(raw, dict):
        raise InvalidEvent(f"line {number}: not a JSON object, so not a Claude Code entry")
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(raw) > MAX_DEPTH:
        raise InvalidEvent(f"line {number}: JSON nested deeper than {MAX_DEPTH} levels")
    if "\\ud" in text.lower():  # escaped surrogates: only pairs make text
        try:
            json.dumps(raw, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidEvent(f"line {number}: a lone surrogate is not text") from None
    return raw


def _cut(number: int, warnings: Warnings) -> Raw | None:
    """A last line cut off (a file still being written): skipped (``None``), with a warning."""
    warnings.append(f"line {number}: truncated or malformed last line skipped")
    return None


def shown(value: object) -> str:
    """``repr(value)``, cut to 40 characters: a value in a note."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _depth(value: object) -> int:
    """How deeply ``value`` nests, walked without recursion; stops past MAX_DEPTH."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack and deepest <= MAX_DEPTH:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in item)
    return deepest
