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
from array import array
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeAlias

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
TALK_MARKS = (b'"type":"user"', b'"type":"assistant"', b'"type": "user"', b'"type": "assistant"')
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

    def __init__(self, folded: Iterable[str] = ()) -> None:
        self._texts: list[str] = []
        self._kinds: dict[str, int] = dict.fromkeys(folded, -1)  # given earlier: counted
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

    def folded(self) -> tuple[str, ...]:
        """The kinds given so far (a later warning of one only counts)."""
        return tuple(self._kinds)

    def all(self) -> tuple[str, ...]:
        """Every warning, a folded kind's first one saying how many more there were."""
        texts = list(self._texts)
        for kind, at in self._kinds.items():
            if self._more[kind] and at >= 0:
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
    return iter(Source(path, max_bytes=max_bytes))


def open_regular(path: str | Path) -> BinaryIO:
    """The regular file at ``path``, open for reading; InvalidEvent for anything else."""
    try:  # O_NONBLOCK: opening a FIFO nobody writes to returns at once
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InvalidEvent(f"cannot read {path}: {exc.strerror}") from None
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind != stat.S_IFREG:
        os.close(fd)
        raise InvalidEvent(f"{_KINDS.get(kind, 'a special file')}, not a regular file: not read")
    return os.fdopen(fd, "rb")


class Source:
    """The numbered lines of a regular file from byte ``start`` (line ``first``), a line
    at a time, at most ``max_bytes`` in all (InvalidEvent past them). It remembers where
    each line ends and hashes what it reads, from the ``digest`` of the bytes before
    ``start``: :meth:`digest_through` is the sha256 of the file up to a line's end."""

    def __init__(
        self,
        path: str | Path,
        *,
        max_bytes: int = MAX_BYTES,
        start: int = 0,
        first: int = 1,
        digest: Any = None,
        file: BinaryIO | None = None,
    ) -> None:
        self.path, self.max_bytes, self.start, self.first = path, max_bytes, start, first
        self._file = file
        self._digest = digest if digest is not None else hashlib.sha256()
        self._ends = array("q")
        self._marks: deque[tuple[int, Any]] = deque(maxlen=4)
        self._before_last: Any = self._digest.copy()

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        file = self._file if self._file is not None else open_regular(self.path)
        with file:
            file.seek(self.start)
            total, number = self.start, self.first - 1
            while line := file.readline(self.max_bytes - total + 1):
                number += 1
                total += len(line)
                if total > self.max_bytes:
                    raise InvalidEvent(
                        f"line {number}: the file is larger than {self.max_bytes:,} bytes, the"
                        " most a transcript may be: not read"
                    )
                self._before_last = self._digest.copy()
                self._digest.update(line)
                self._ends.append(total)
                if any(t in line for t in TALK_MARKS):
                    self._marks.append((number, self._digest.copy()))
                yield number, line

    def close(self) -> None:
        """Close the file handed in, if it is never read."""
        if self._file is not None:
            self._file.close()

    def end_of(self, number: int) -> int:
        """Where line ``number`` ends (the start, for the line before the first)."""
        return self.start if number < self.first else self._ends[number - self.first]

    def digest_through(self, number: int) -> str | None:
        """The sha256 of the bytes up to the end of line ``number``, when it was kept (the
        last two lines, and the last few that look like a user or assistant entry);
        ``None`` otherwise."""
        last = self.first - 1 + len(self._ends)
        kept = dict(self._marks)
        kept.update({last: self._digest, last - 1: self._before_last})
        digest = kept.get(number)
        return None if digest is None else str(digest.hexdigest())


def entries(
    lines: Iterable[tuple[int, bytes]], warnings: Warnings, seen: Seen | None = None
) -> list[Entry]:
    """The entries of known types, in file order, each once (see the module doc). ``seen``:
    what the lines before these were (reading a transcript's tail): an empty tail is no
    error, and an unknown type noted before is not noted again."""
    found: list[Entry] = []
    seen = seen if seen is not None else Seen()
    tail = seen.tail
    previous: tuple[int, bytes] | None = None
    for item in ((n, line) for n, line in lines if line.strip()):
        if previous is not None:
            _keep(previous, False, found, seen, warnings)
        previous = item
    if previous is None and not tail:
        raise InvalidEvent("empty file: not a Claude Code transcript")
    if previous is not None:
        _keep(previous, True, found, seen, warnings)
    for kind, number in seen.unknown.items():
        if kind not in seen.noted:
            text = f"unknown entry type {kind}: mapped to nothing, kept for the parent chain"
            warnings.note("unknown_entry", number, text)
    seen.noted |= set(seen.unknown)
    seen.warn(warnings)
    return found


def _keep(
    item: tuple[int, bytes], last: bool, found: list[Entry], seen: Seen, warnings: Warnings
) -> None:
    number, line = item
    raw = decode(number, line, last=last, warnings=warnings)
    if raw is None:
        return
    kind = raw.get("type")
    if not (isinstance(kind, str) and kind in KNOWN_TYPES):
        seen.unknown.setdefault(repr(kind), number)
    entry = Entry(line=number, raw=raw)
    seen.last = number
    if seen.first(entry, line):
        found.append(entry)


@attrs.define
class Seen:
    """The uuids (and, for entries without one, the digests of the lines) read so far, the
    unknown types met (first line) and those noted, the last line decoded. ``tail``: the
    lines are a transcript's tail, after lines read before (see :func:`entries`)."""

    uuids: dict[str, int] = attrs.field(factory=dict)
    lines: dict[bytes, int] = attrs.field(factory=dict)  # digest: line
    repeats: list[tuple[int, str]] = attrs.field(factory=list)
    unknown: dict[str, int] = attrs.field(factory=dict)
    noted: set[str] = attrs.field(factory=set)
    last: int = 0
    tail: bool = False

    def first(self, entry: Entry, line: bytes) -> bool:
        """Whether ``entry`` is not a repeat of one read before (and remember it)."""
        if entry.uuid is None and entry.type not in READ_TYPES:
            return True  # bookkeeping Claude Code may write twice: nothing is read from it
        if entry.uuid is None:
            digest = hashlib.blake2b(line.strip(), digest_size=16).digest()
            if digest in self.lines:
                self.repeats.append((entry.line, "an identical line"))
                return False
            self.lines[digest] = entry.line
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
