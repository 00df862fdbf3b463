"""The files a command line names: read only if regular, written whole or not at all.

A FIFO, a device (``/dev/zero``) or a folder given where a file is read is bad
input, found before anything blocks on it or reads it until memory runs out: the
file is opened without blocking and checked to be a regular file first. An output
file is written to a temporary file beside it and renamed over it once every byte
is on disk, so a full disk, a Ctrl-C or a failed command leaves the old file (or
nothing), never half of the new one. A process killed outright (``kill -9``, out of
memory) cannot remove its temporary file: its name says whose it is (the target's,
this host's, the writer's pid), and the next write of the same target removes those
whose writer is no longer running, once they are ten minutes old.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import socket
import stat
import tempfile
import time
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
    _remove_stale(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=_prefix(target, os.getpid()), suffix=".tmp", dir=folder)
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


def _host() -> str:
    """This host's name without dots (a temporary file's name parts are dot-separated)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def _prefix(target: Path, pid: int) -> str:
    """How the temporary files of writes of ``target`` by ``pid`` on this host start."""
    return f".{target.name}.{_host()}.{pid}."


STALE_AFTER = 600.0  # seconds a dead writer's temporary file is left before removal


def _remove_stale(target: Path) -> None:
    """Remove the temporary files writes of ``target`` on this host left when they were
    killed: named as :func:`written` names them (the target's name, this host, a pid
    as the kernel writes one, mkstemp's eight characters), regular files of this user,
    untouched for ``STALE_AFTER`` seconds, whose pid runs no process here. Anything
    else is left alone: another host's, a live writer's, a name this did not make, and
    a file still being written (a writer in another pid namespace on this host's name
    and folder is not seen as running, but its file is fresh)."""
    mine = re.compile(
        re.escape(f".{target.name}.{_host()}.") + r"([1-9][0-9]{0,9})\.[A-Za-z0-9_]{8}\.tmp"
    )
    with contextlib.suppress(OSError):
        for name in os.listdir(target.parent):
            found = mine.fullmatch(name)
            if found is None or _running(int(found.group(1))):
                continue
            path = target.parent / name
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                old = time.time() - info.st_mtime > STALE_AFTER
                if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and old:
                    os.unlink(path)


def _running(pid: int) -> bool:
    """Whether ``pid`` may be a running process (of any user); this process is."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's (EPERM), or no pid this can ask about
        return True
    return True


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
