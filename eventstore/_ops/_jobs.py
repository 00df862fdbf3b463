"""``verify --jobs N``: the sessions of one journal verified by N worker processes.

Each worker opens the journal itself (``reopen``, read-only) once, and verifies the
sessions it is handed; the parent, which would otherwise wait, runs the file's
integrity check meanwhile (on its own connection: SQLite's work, no session's). The
parent hands the findings on in the order a single process finds them (the integrity
check's, then session by session in the order asked), so the output does not depend
on ``N`` or on which worker finished first. Sessions are verified in processes, not
threads: a verify is Python (decoding, hashing, folding) held by the GIL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

import attrs

from eventstore._journal import Journal
from reducers import JournalError

if TYPE_CHECKING:  # the pool's modules are imported when a pool is made
    import multiprocessing.context
    from concurrent.futures import Future, ProcessPoolExecutor

T = TypeVar("T")
Check = Callable[[Journal, str], Iterable[T]]
"""What a worker runs for a session (``verify_session``: a module-level function, so
that it pickles by name where processes are spawned)."""
Opener = Callable[[], Journal]
"""Opens the journal again (read-only) in a worker: it must pickle (``Reopen``, a
module-level function or a ``functools.partial`` of one) where processes are spawned."""


class WorkerDied(JournalError):
    """A worker process ended without handing back its sessions' findings (killed, or
    out of memory): nothing is concluded about the sessions it held."""


@attrs.frozen
class Reopen:
    """Opens the journal at ``location`` (a path or a URL) read-only: an ``Opener``."""

    location: str

    def __call__(self) -> Journal:
        return Journal(self.location, readonly=True)


_journal: Journal | None = None  # the worker's own


def _open(reopen: Opener) -> None:
    global _journal
    _journal = reopen()


def _session(check: Check[T], session_id: str) -> list[T]:
    assert _journal is not None  # _open ran first: the pool's initializer
    return list(check(_journal, session_id))


def _context() -> multiprocessing.context.BaseContext:
    """``fork`` where there is one (a worker starts in milliseconds, nothing imported
    again), else ``spawn``."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def verify_in_workers(
    reopen: Opener,
    check: Check[T],
    session_ids: list[str],
    jobs: int,
    integrity: Callable[[], list[str]],
) -> tuple[list[str], Iterator[tuple[str, Iterable[T]]]]:
    """``integrity()`` (run here while the workers start), then ``(session_id,
    check(journal, session_id))`` in ``session_ids``' order as each becomes available
    (the workers run ahead)."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        max_workers=min(jobs, len(session_ids)),
        mp_context=_context(),
        initializer=_open,
        initargs=(reopen,),
    )
    try:
        futures = [pool.submit(_session, check, session_id) for session_id in session_ids]
        problems = integrity()
    except BaseException:
        pool.shutdown(cancel_futures=True)
        raise
    return problems, _collected(pool, session_ids, futures)


def _collected(
    pool: ProcessPoolExecutor, session_ids: list[str], futures: list[Future[list[T]]]
) -> Iterator[tuple[str, Iterable[T]]]:
    from concurrent.futures.process import BrokenProcessPool

    try:
        for session_id, future in zip(session_ids, futures, strict=True):
            try:
                found = future.result()
            except BrokenProcessPool:
                raise WorkerDied(
                    f"a worker process died (killed, or out of memory) while verifying"
                    f" {session_id!r} or a session after it: nothing is concluded about"
                    " them; verify again (--jobs 1 verifies in this process)"
                ) from None
            yield session_id, found
    finally:
        pool.shutdown(cancel_futures=True)
