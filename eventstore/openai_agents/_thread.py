"""The thread a ``TierlogSession``'s journal calls run on.

A journal connection belongs to the thread that opened it. Given a path,
``JournalThread`` opens the journal (and the session, through ``setup``) on a
worker thread of its own and runs every call there: ``do`` from any thread,
``ado`` awaited without blocking the event loop; one thread also serialises the
calls. Given an open ``Journal``, the calls run in the calling thread, which must
be the one that opened it. ``close`` closes a journal it opened, from any thread,
its own included. No SDK here: only threads and the journal.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from eventstore._journal import Journal
from eventstore._journal import open as open_journal
from eventstore._session import Session
from reducers import JournalError

T = TypeVar("T")


class JournalThread:
    """One journal session and the thread its calls run on.

    ``name`` names the owner in the error a closed one raises; ``setup`` gets the
    session out of the journal, on the journal's thread.
    """

    journal: Journal
    session: Session

    def __init__(
        self, name: str, db: str | Path | Journal, setup: Callable[[Journal], Session]
    ) -> None:
        self._name = name
        self.closed = False
        self._executor: ThreadPoolExecutor | None = None
        self._owner = threading.get_ident()
        if isinstance(db, Journal):
            if db.thread != self._owner:
                raise JournalError(
                    "the Journal given belongs to the thread that opened it, not this one:"
                    " open it here, or give a path to let the session own a journal thread"
                )
            self.journal = db
            self.session = self.do(lambda: setup(db))
            return
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tierlog")

        def start() -> tuple[Journal, Session]:
            self._owner = threading.get_ident()
            journal = open_journal(db)
            try:
                return journal, setup(journal)
            except BaseException:
                journal.close()
                raise

        try:
            self.journal, self.session = self._executor.submit(start).result()
        except BaseException:
            self._executor.shutdown(wait=True)
            raise

    def check_open(self) -> None:
        """JournalError once closed."""
        if self.closed:
            raise JournalError(f"{self._name} is closed")

    def do(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the journal's thread, from any thread."""
        self.check_open()
        if threading.get_ident() == self._owner:
            return fn()
        if self._executor is None:
            raise JournalError(
                "this TierlogSession runs on the Journal it was given, which belongs to the"
                " thread that opened it: give it a path to let it own a journal thread"
            )
        return self._executor.submit(fn).result()

    async def ado(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the journal's thread, awaited without blocking the event loop.

        Awaited on the journal's thread itself (a loop a ``run(fn)`` callback started),
        ``fn()`` runs right there: queued behind the running call it would never run."""
        self.check_open()
        if self._executor is None or threading.get_ident() == self._owner:
            return self.do(fn)
        return await asyncio.wrap_future(self._executor.submit(fn))

    def close(self) -> None:
        """Close the journal if this thread opened it (idempotent).

        Called on the journal's own thread, it closes the journal right there and
        lets the thread end once the running call returns.
        """
        if self.closed:
            return
        self.closed = True
        if self._executor is None:
            return
        if threading.get_ident() == self._owner:  # waiting on our own thread would hang
            self.journal.close()
            self._executor.shutdown(wait=False)
            return
        self._executor.submit(self.journal.close).result()
        self._executor.shutdown(wait=True)
