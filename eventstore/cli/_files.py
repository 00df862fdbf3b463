"""The files a command line names: read only if regular, written whole or not at all.

A FIFO, a device (``/dev/zero``) or a folder given where a file is read is bad
input, found before anything blocks on it or reads it until memory runs out: the
file is opened without blocking and checked to be a regular file first. An output
file is written to a temporary file beside it and renamed over it once every byte
is on disk, so a full disk, a Ctrl-C or a failed command leaves the old file (or
nothing), never half of the new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from reducers import InvalidArgument


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (a symlink to one is): a
    FIFO, a device or a folder is InvalidArgument, and opening one never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise InvalidArgument(f"cannot read {path}: {_why(exc)}") from None
    try:
        kind = os.fstat(fd).st_mode
        if not stat.S_ISREG(kind):
            raise InvalidArgument(f"cannot read {path}: {_kind(kind)}, not a regular file")
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(path: str, limit: int = 64 * 2**20) -> str:
    """A small regular file's text (a witness), at most ``limit`` bytes."""
    with open_regular(path) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InvalidArgument(f"cannot read {path}: larger than {limit // 2**20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgument(f"cannot read {path}: {exc}") from None


def check_regular(path: str, what: str = "read") -> None:
    """InvalidArgument unless ``path`` is missing or a regular file (for an argument
    another module opens: a transcript, a journal file)."""
    try:
        kind = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:
        raise InvalidArgument(f"cannot {what} {path}: {_why(exc)}") from None
    if not stat.S_ISREG(kind):
        raise InvalidArgument(f"cannot {what} {path}: {_kind(kind)}, not a regular file")


@contextlib.contextmanager
def written(path: str | Path) -> Iterator[BinaryIO]:
    """A file to write ``path``'s new bytes to: renamed over ``path`` (fsynced, with
    its folder) when the block ends normally, removed if it raises. ``path`` must be
    missing or a regular file (a FIFO or a device is InvalidArgument: redirect
    standard output to write to one)."""
    target = Path(path)
    check_regular(str(target), "write")
    folder = target.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InvalidArgument(f"cannot write {target}: {_why(exc)}") from None
    try:
        os.fchmod(fd, _mode(target))
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:  # a full disk, most likely: named after the target
        _unlink(tmp)
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    except BaseException:
        _unlink(tmp)
        raise
    _sync_folder(folder)


def _mode(target: Path) -> int:
    """The mode the file gets: the old file's, else what ``open`` would give it."""
    with contextlib.suppress(OSError):
        return stat.S_IMODE(os.stat(target).st_mode)
    umask = os.umask(0o22)
    os.umask(umask)
    return 0o666 & ~umask


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system syncs a folder
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _why(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"
