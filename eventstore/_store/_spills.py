"""Spill storage, the one effect a decision has: write, read back, check.

A spill is a byte-exact copy of a raw range of a session's turns. Its bytes live in
the journal's spill root (``<db file>.spills/`` beside a SQLite journal) under a
handle derived from their sha256 alone, ``<sha256[:2]>/<sha256>.spill``: nothing in
it names the database, its folder or the session, so a journal that is moved,
renamed, exported and imported (under any session id) records the same handles and
the same state sha256.

A spill file is a one-line header naming its *base* (an earlier spill whose bytes
are a prefix of its own, or none) followed by only the bytes after the base's: a
refusal that spills the whole transcript again writes only the turns appended since
the last one. Reading a handle reassembles the whole, and every file on the way is
checked against the size and sha256 recorded for it (the event's for the handle
itself, the using file's header for a base).

Chains stay shallow. A refusal's spill is built on the last one's, and chains count
like a number in base ``SPILL_FANOUT``: when the newest ``SPILL_FANOUT - 1`` files of a
chain each span the same number of spills, the next file holds their bytes and the new
turns, and names the file below them as its base (so a chain holds at most
``SPILL_FANOUT - 1`` files of each span, and is about ``log(spills)`` files deep,
each byte stored about as many times); and no chain is deeper than ``SPILL_DEPTH``
files: a spill that would be is written whole (a file with no base). Building on a
spill stats, and reading one opens, a bounded number of files however many refusals
came before.

Reads never leave the root (no ``..``, no absolute path, no symlink pointing out),
open only regular files, and never read more than a file's recorded size (plus its
header) and one byte. Handles written by tierlog 0.1
(``<db file>.spills/<session>/v<version>_<lo>-<hi>.jsonl``, plain bytes without a
header) resolve inside the same root, whatever the database is called now.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from eventstore._errors import IntegrityError
from reducers import JournalError, Spill, Spilled, canonical_json, handle_problem

FORMAT = "tierlog-spill/1"
HEADER_MAX = 4096  # bytes of a header line, newline included
SPILL_DEPTH = 64  # files in a chain at most: a deeper spill is written whole instead
SPILL_FANOUT = 16  # SPILL_FANOUT - 1 files of one span merge into one SPILL_FANOUT times it
_LEGACY_ROOT = ".spills"  # the first part of a 0.1 handle: "<db file>.spills"

Undo = Callable[[], None]
Sig = tuple[int, int, int, int, int]  # what os.stat says of a file: device, inode, size, times


class SpillProblem(Exception):
    """Why a handle cannot be read back as its recorded bytes."""


class _Symlink(SpillProblem):
    """The last part of a path is a symlink (opened with O_NOFOLLOW)."""


@attrs.frozen
class Ref:
    """What a spill is recorded as: a handle, a size, a sha256."""

    handle: str
    sha256: str
    bytes: int

    @classmethod
    def of(cls, spill: Spill | Spilled) -> Ref:
        """The reference a recorded spill makes."""
        return cls(spill.handle, spill.sha256, spill.bytes)


def handle_for(sha256: str) -> str:
    """The handle of the bytes whose sha256 is ``sha256``."""
    return f"{sha256[:2]}/{sha256}.spill"


def is_legacy(handle: str) -> bool:
    """Whether ``handle`` has the 0.1 form ``<db file>.spills/...``."""
    first, sep, _ = handle.partition("/")
    return bool(sep) and first.endswith(_LEGACY_ROOT)


@attrs.frozen
class _Known:
    """A spill file this journal object wrote or read back whole: the running sha256 of
    its bytes (its bases' included), where it is, what ``stat`` said of it then, and
    what is known of the file of its base (``None`` for none; a base not known leaves
    the file out of ``_known``); ``span`` is the number of spills whose bytes the file
    holds, if this object wrote it on a chain it knew, and ``depth`` counts the files of
    its chain, its own too."""

    ref: Ref
    hasher: Any
    path: str
    sig: Sig
    base: _Known | None
    span: int | None
    depth: int = attrs.field(init=False)

    @depth.default
    def _depth(self) -> int:
        return 1 if self.base is None else self.base.depth + 1


class FolderSpills:
    """The spill root of one SQLite journal: a folder beside it.

    ``on_write(undo)`` is told how to remove each file a write creates, so that the
    caller's transaction can take it back if it does not commit.
    """

    orphan_hint = "tierlog verify --clean removes it"
    max_depth = SPILL_DEPTH  # files in a chain at most (an instance may lower it)
    fanout = SPILL_FANOUT  # files of one span merged into one (an instance may change it)

    def __init__(self, root: Path, on_write: Callable[[Undo], None] | None = None) -> None:
        self.root = root
        self._on_write = on_write
        self._known: dict[Ref, _Known] = {}

    @classmethod
    def beside(cls, db: Path, on_write: Callable[[Undo], None] | None = None) -> FolderSpills:
        """The spill root of the SQLite journal at ``db``: ``<db file>.spills/``."""
        return cls(db.with_name(db.name + _LEGACY_ROOT), on_write)

    @property
    def location(self) -> str:
        """The spill folder, for messages."""
        return str(self.root)

    # -- write ----------------------------------------------------------------------------
    def write(self, data: bytes, *, lo: int, hi: int, earlier: Iterable[Spill]) -> Spilled:
        """Store ``data`` (the raw range ``[lo, hi)``) and return the event recording it.

        Reuses what is already stored: the same bytes are not written twice, and the
        longest earlier spill whose bytes start ``data`` becomes the base (unless its
        chain is ``max_depth`` files deep: then the file holds ``data`` whole). Raises
        :class:`JournalError` naming the cause if the file cannot be written; then
        nothing is left on disk.
        """
        hasher = hashlib.sha256(data)
        digest = hasher.hexdigest()
        spilled = Spilled(lo=lo, hi=hi, handle=handle_for(digest), sha256=digest, bytes=len(data))
        check = self.checker()
        if check(spilled) is None:
            self._learn(check)
            return spilled
        base = self._base(data, lo, earlier, check)
        self._learn(check)
        body = data[base.bytes :] if base else data
        self._put(Ref.of(spilled), hasher, base, body)
        return spilled

    def write_after(self, base: Spill, tail: bytes, *, lo: int, hi: int) -> Spilled | None:
        """Store the raw range ``[lo, hi)`` whose bytes are ``base``'s followed by
        ``tail``, without reading ``base`` again: ``None`` (write the whole instead)
        unless this object wrote or read back every file of ``base``'s chain and
        ``stat`` says none has changed since, or when the result is stored already.

        The caller vouches that ``base``'s bytes start the range's: the spill's sha256
        continues ``base``'s running hash over ``tail``; the file holds ``tail`` after
        the bytes of the files of the chain it merges (``_merge``), those read back and
        checked against ``base``'s sha256 (``None`` if they do not read back).
        """
        ref = Ref.of(base)
        known = self._fresh(ref)
        if known is None:
            return None
        hasher = known.hasher.copy()
        hasher.update(tail)
        digest = hasher.hexdigest()
        size = base.bytes + len(tail)
        spilled = Spilled(lo=lo, hi=hi, handle=handle_for(digest), sha256=digest, bytes=size)
        if not tail:
            return spilled
        try:
            if os.path.lexists(self.checker().resolve(spilled.handle)):
                return None  # stored before: whether it reads back is the whole write's check
        except SpillProblem:
            return None  # the whole write says why it cannot be stored
        below, merged, span = self._merge(known)
        try:
            body = self._bodies(known, below, merged) + tail
        except SpillProblem:
            return None  # the whole write finds a base that reads back, or none
        self._put(Ref.of(spilled), hasher, below.ref if below else None, body, span)
        return spilled

    def _merge(self, top: _Known) -> tuple[_Known | None, list[_Known], int | None]:
        """Where a spill built on ``top`` goes: the file it names as its base, the files
        above that one whose bytes it holds (newest first), and its span. ``fanout - 1``
        files of one span on top merge (with the new turns) into one of ``fanout`` times
        that span, then the files below them, likewise; a chain that would still be
        deeper than ``max_depth`` is merged whole."""
        span, merged = 1, []
        below: _Known | None = top
        while self.fanout > 1:
            group: list[_Known] = []
            cur = below
            while cur is not None and cur.span == span and len(group) < self.fanout - 1:
                group.append(cur)
                cur = cur.base
            if len(group) < self.fanout - 1:
                break
            merged += group
            below, span = cur, span * self.fanout
        if below is None or below.depth < self.max_depth:
            return below, merged, span
        while below is not None:
            merged.append(below)
            below = below.base
        return None, merged, None

    def _bodies(self, top: _Known, below: _Known | None, merged: list[_Known]) -> bytes:
        """The bytes the ``merged`` files add to ``below``'s, read back: with ``below``'s
        running hash they must give ``top``'s recorded sha256 (SpillProblem otherwise)."""
        if not merged:
            return b""
        check = self.checker()
        parts = [check.body(known.ref) for known in reversed(merged)]
        hasher = below.hasher.copy() if below else hashlib.sha256()
        for part in parts:
            hasher.update(part)
        if hasher.hexdigest() != top.ref.sha256:
            raise SpillProblem(f"spill {top.ref.handle} does not match its recorded sha256")
        return b"".join(parts)

    def _put(
        self, ref: Ref, hasher: Any, base: Ref | None, body: bytes, span: int | None = None
    ) -> None:
        """Write the file of ``ref`` (its header naming ``base``) and remember it."""
        header = {"format": FORMAT, "base": attrs.asdict(base) if base else None}
        path = self._store(ref.handle, canonical_json(header) + b"\n" + body)
        sig = _sig(path)
        if sig is not None:
            self._remember(ref, hasher.copy(), path, sig, base, span)

    def _learn(self, check: Checker) -> None:
        """Remember the files ``check`` read back whole, each chain from its first file."""
        done: set[Ref] = set()
        for ref in check.seen:
            chain: list[Ref] = []
            cur: Ref | None = ref
            while cur is not None and cur not in done and cur in check.seen:
                chain.append(cur)
                cur = check.seen[cur][2]
            done.update(chain)
            for one in reversed(chain):
                self._remember(one, check.verified(one), *check.seen[one])

    def _remember(
        self, ref: Ref, hasher: Any, path: str, sig: Sig, base: Ref | None, span: int | None = None
    ) -> None:
        """Know ``ref``'s file if it read back whole and its base is known."""
        below = self._known.get(base) if base else None
        if hasher is not None and (base is None or below is not None):
            self._known[ref] = _Known(ref, hasher, path, sig, below, span)

    def _fresh(self, ref: Ref) -> _Known | None:
        """What is known of ``ref`` if every file of its chain is known and unchanged
        since (same device, inode, size, mtime and ctime), else ``None``: one ``stat``
        a file, no read."""
        top = known = self._known.get(ref)
        while known is not None:
            if _sig(known.path) != known.sig:
                return None
            known = known.base
        return top

    def adopt(self, spill: Spill | Spilled, data: bytes, earlier: Iterable[Spill] = ()) -> None:
        """Store bytes recorded elsewhere under their recorded handle (``tierlog ship``);
        IntegrityError if they are not the recorded bytes."""
        if (hashlib.sha256(data).hexdigest(), len(data)) != (spill.sha256, spill.bytes):
            raise IntegrityError(f"spill {spill.handle} does not match its recorded sha256")
        if is_legacy(spill.handle):  # a 0.1 handle: a plain file, kept as recorded
            if self.problem(spill) is not None:
                self._store(spill.handle, data)
            return
        got = self.write(data, lo=spill.lo, hi=spill.hi, earlier=earlier)
        if got.handle != spill.handle:
            raise IntegrityError(f"spill {spill.handle} is not named after its sha256")

    def _base(self, data: bytes, lo: int, earlier: Iterable[Spill], check: Checker) -> Ref | None:
        """The longest earlier spill from ``lo`` whose bytes are a prefix of ``data``
        and still read back, if any, unless its chain is ``max_depth`` files deep."""
        candidates = [
            s for s in earlier if s.lo == lo and 0 < s.bytes < len(data) and not is_legacy(s.handle)
        ]
        if not candidates:
            return None
        best = max(candidates, key=lambda s: (s.bytes, s.version))
        if hashlib.sha256(data[: best.bytes]).hexdigest() != best.sha256 or check(best):
            return None
        ref = Ref.of(best)
        return ref if check.depth(ref) < self.max_depth else None

    def _store(self, handle: str, content: bytes) -> str:
        """Write ``content`` durably at ``handle``: temp file, fsync, rename, fsync; the
        path written."""
        try:
            path = Path(self.checker().resolve(handle))
        except SpillProblem as exc:
            raise JournalError(f"cannot write spill {handle}: {exc}") from None
        existed = os.path.lexists(path)
        made: list[Path] = []
        tmp = path.with_name(path.name + ".tmp")
        try:
            _make_dirs(path.parent, made)
            _write_synced(tmp, path, content)
        except OSError as exc:
            _remove(tmp, made)
            raise JournalError(
                f"cannot write spill {handle} in {self.root}: {exc.strerror or exc}"
            ) from None
        if not existed and self._on_write is not None:
            self._on_write(lambda: _remove(path, made))
        return str(path)

    # -- read back and check ------------------------------------------------------------
    def read(self, spill: Spill | Spilled) -> bytes:
        """The spill's bytes, checked against its recorded size and sha256.

        Raises :class:`IntegrityError` saying why they cannot be read back.
        """
        try:
            return self.checker().read(Ref.of(spill))
        except SpillProblem as exc:
            raise IntegrityError(str(exc)) from None

    def checker(self) -> Checker:
        """A check of spills that remembers what it verified (use one per pass)."""
        return Checker(os.path.realpath(self.root))

    def problem(self, spill: Spill | Spilled) -> str | None:
        """Why the spill no longer reads back as its recorded bytes, or ``None``."""
        return self.checker()(spill)

    # -- orphans ------------------------------------------------------------------------
    def orphans(self, handles: Iterable[str]) -> list[str]:
        """Files in the root that no recorded handle (nor a base of one) reaches, as
        paths relative to the root: left by a crash between writing and committing."""
        if not self.root.is_dir():
            return []
        check = self.checker()
        reached: set[str] = set()
        for handle in handles:
            check.reach(handle, reached)
        return sorted(
            rel
            for rel, real in _files(check.root)
            if real not in reached and _WRITTEN_BY_TIERLOG.fullmatch(rel)
        )

    def remove(self, names: Iterable[str]) -> None:
        """Remove files (relative to the root, as ``orphans`` names them) and the folders
        this leaves empty; never through a symlink: a spill root that is one is refused
        (JournalError), and a link inside it is removed, never what it points to."""
        if os.path.islink(self.root):
            raise JournalError(
                f"{self.root} is a symlink: nothing is removed through it (its files are"
                " not this journal's to delete; clean the folder it points to by hand)"
            )
        root = Path(os.path.realpath(self.root))
        for name in names:
            path = root / name
            path.unlink(missing_ok=True)
            _remove_dirs([p for p in path.parents if p != root and root in p.parents])


class Checker:
    """One pass over a spill root: resolves handles and checks spills, remembering the
    folders it resolved and each verified file's running hash, so that many spills
    sharing bases read every file once."""

    def __init__(self, root: str) -> None:
        self.root = root  # every symlink resolved
        self._folders: dict[str, str] = {}
        self._memo: dict[Ref, Any] = {}
        self.seen: dict[Ref, tuple[str, Sig, Ref | None]] = {}  # each file read: where, stat

    def depth(self, ref: Ref) -> int:
        """The files of ``ref``'s chain, its own too, as far as this pass read them."""
        count, cur = 0, self.seen.get(ref)
        while cur is not None:
            count += 1
            cur = None if cur[2] is None else self.seen.get(cur[2])
        return count

    def body(self, ref: Ref) -> bytes:
        """The bytes one file of a chain adds to its base's, their size checked (their
        sha256 is the caller's to check)."""
        return self._level(ref)[1]

    def verified(self, ref: Ref) -> Any | None:
        """A copy of the running hash of ``ref`` if this pass read it back whole."""
        hasher = self._memo.get(ref)
        return None if hasher is None else hasher.copy()

    def __call__(self, spill: Spill | Spilled) -> str | None:
        """Why the spill does not read back as its recorded bytes, or ``None``."""
        try:
            self._walk(Ref.of(spill), None)
        except SpillProblem as exc:
            return str(exc)
        return None

    def read(self, ref: Ref) -> bytes:
        """The bytes of ``ref``, checked (SpillProblem otherwise)."""
        parts: list[bytes] = []
        self._walk(ref, parts)
        return b"".join(parts)

    def resolve(self, handle: str) -> str:
        """The file a handle names inside the root: a canonical relative path that no
        symlink leads out of (the last part is opened without following links)."""
        problem = handle_problem(handle)
        if problem is not None:
            raise SpillProblem(f"spill handle {handle!r}: {problem}")
        *folders, name = handle.split("/")[1:] if is_legacy(handle) else handle.split("/")
        folder = self.root
        for part in folders:
            folder = self._folder(handle, os.path.join(folder, part))
        return os.path.join(folder, name)

    def _folder(self, handle: str, path: str) -> str:
        """``path`` with a symlink resolved, checked to stay inside the root; cached."""
        real = self._folders.get(path)
        if real is None:
            real = os.path.realpath(path) if os.path.islink(path) else path
            if not real.startswith(self.root + os.sep):
                raise SpillProblem(f"spill handle {handle!r} leads out of the spill root")
            self._folders[path] = real
        return real

    def reach(self, handle: str, reached: set[str]) -> None:
        """Add the files of a handle and of its bases (as far as they read) to ``reached``,
        stopping at one already there."""
        cur: str | None = handle
        while cur is not None:
            try:
                path = self._open_path(cur, self.resolve(cur))
            except SpillProblem:
                return
            if path in reached:
                return
            reached.add(path)
            cur = None if is_legacy(cur) else _base_handle(path)

    def _walk(self, ref: Ref, sink: list[bytes] | None) -> None:
        """Read the chain from ``ref`` down to its first file, then hash (and collect) the
        bytes upwards, checking each file's size and sha256 on the way."""
        levels: list[tuple[Ref, bytes]] = []
        hasher, cur = None, ref
        while True:
            if sink is None and cur in self._memo:
                hasher = self._memo[cur].copy()
                break
            base, body = self._level(cur)
            levels.append((cur, body))
            if base is None:
                break
            cur = base
        hasher = hasher or hashlib.sha256()
        for level, body in reversed(levels):
            hasher.update(body)
            if sink is not None:
                sink.append(body)
            if hasher.hexdigest() != level.sha256:
                raise SpillProblem(f"spill {level.handle} does not match its recorded sha256")
            self._memo[level] = hasher.copy()

    def _level(self, ref: Ref) -> tuple[Ref | None, bytes]:
        """One file of a chain: the base it names and the bytes it adds, sizes checked."""
        path = self.resolve(ref.handle)
        limit = ref.bytes + 1 if is_legacy(ref.handle) else HEADER_MAX + ref.bytes + 1
        data, sig = self._read(ref.handle, path, limit)
        base, body = (None, data) if is_legacy(ref.handle) else _parse(ref, data)
        self.seen[ref] = (path, sig, base)
        added = ref.bytes - (base.bytes if base else 0)
        if len(body) != added:
            got = len(body) + (base.bytes if base else 0)
            raise SpillProblem(f"spill {ref.handle} has {got} bytes, {ref.bytes} recorded")
        return base, body

    def _read(self, handle: str, path: str, limit: int) -> tuple[bytes, Sig]:
        """At most ``limit`` bytes of the file, and its ``stat``; a symlink is followed
        only inside the root."""
        try:
            return _read_signed(path, limit)
        except _Symlink:
            return _read_signed(self._open_path(handle, path), limit)

    def _open_path(self, handle: str, path: str) -> str:
        """``path``, or where it links to when that stays inside the root."""
        if not os.path.islink(path):
            return path
        real = os.path.realpath(path)
        if not real.startswith(self.root + os.sep):
            raise SpillProblem(f"spill handle {handle!r} leads out of the spill root")
        return real


def _parse(ref: Ref, data: bytes) -> tuple[Ref | None, bytes]:
    """A spill file's base and body; SpillProblem unless the header is well formed."""
    line, newline, body = data.partition(b"\n")
    if not newline or len(line) >= HEADER_MAX:
        raise SpillProblem(f"spill {ref.handle} has no header")
    header = _header(line)
    if header is None or header.get("format") != FORMAT:
        raise SpillProblem(f"spill {ref.handle} is not a {FORMAT} file")
    base = header.get("base")
    if base is None:
        return None, body
    fields = base if isinstance(base, dict) else {}
    handle, sha256, size = fields.get("handle"), fields.get("sha256"), fields.get("bytes")
    if (
        not isinstance(handle, str)
        or not isinstance(sha256, str)
        or type(size) is not int
        or not 0 < size < ref.bytes
    ):
        raise SpillProblem(f"spill {ref.handle} names a malformed base (or one not shorter)")
    return Ref(handle, sha256, size), body


def _header(line: bytes) -> dict[str, Any] | None:
    """A header line as a JSON object, or ``None``."""
    try:
        header = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return header if isinstance(header, dict) else None


def _base_handle(path: str) -> str | None:
    """The base a spill file's header names, if it can be read."""
    try:
        header = _header(_read_bounded(path, HEADER_MAX).partition(b"\n")[0])
    except SpillProblem:
        return None
    base = header.get("base") if header else None
    handle = base.get("handle") if isinstance(base, dict) else None
    return handle if isinstance(handle, str) else None


# The names tierlog writes in a spill root: content-addressed files (and the temp file
# of one being written), and 0.1's per-session files. Anything else in the folder is
# someone else's: never listed as an orphan, never removed.
_WRITTEN_BY_TIERLOG = re.compile(
    r"[0-9a-f]{2}/[0-9a-f]{64}\.spill(\.tmp)?"
    r"|[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}/v[0-9]{8}_[0-9]+-[0-9]+\.jsonl(\.tmp)?"
)


def _files(root: str) -> Iterator[tuple[str, str]]:
    """Every file under ``root`` (symlinks not followed): relative and full path."""
    for folder, _, names in os.walk(root):
        for name in names:
            full = os.path.join(folder, name)
            yield os.path.relpath(full, root), full


def _read_bounded(path: str | Path, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file at ``path`` (no FIFO, device, link)."""
    return _read_signed(path, limit)[0]


def _sig(path: str) -> Sig | None:
    """What ``stat`` says of the file at ``path`` (links followed), ``None`` if nothing."""
    try:
        return _signature(os.stat(path))
    except OSError:
        return None


def _signature(st: os.stat_result) -> Sig:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _read_signed(path: str | Path, limit: int) -> tuple[bytes, Sig]:
    """At most ``limit`` bytes of the regular file at ``path`` (no FIFO, device, link),
    and what ``fstat`` said of it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        kind = _Symlink if exc.errno == errno.ELOOP else SpillProblem
        raise kind(f"cannot read {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SpillProblem(f"{path} is not a regular file")
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), _signature(st)
    except OSError as exc:
        raise SpillProblem(f"cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _write_synced(tmp: Path, path: Path, content: bytes) -> None:
    with open(tmp, "wb") as f:
        f.write(content)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _make_dirs(folder: Path, made: list[Path]) -> None:
    """Create ``folder`` and its missing parents, recording each in ``made`` (deepest
    first) as soon as it exists."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
        made.insert(0, path)


def _remove_dirs(folders: Iterable[Path]) -> None:
    """Remove each folder (deepest first) that is empty; leave the others."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def _remove(path: Path, made: list[Path]) -> None:
    """Undo a write: the file, then the folders made for it (never raises)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        return
    _remove_dirs(made)
