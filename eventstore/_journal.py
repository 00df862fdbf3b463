"""The Journal: one database, many sessions; it owns the recorder, spills and snapshots.

A journal is a recorder plus a spill store: a SQLite file with a spill folder
beside it, or a PostgreSQL URL with the spills in the same database
(``eventstore.open`` picks by the location; ``Journal.of`` takes both ready-made).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import attrs

from eventstore._location import check_location, is_url
from eventstore._sqlite import SYNCHRONOUS, SqliteRecorder
from eventstore._store import SNAPSHOT_EVERY, utc_now
from reducers import InvalidArgument, InvalidEvent, SessionConfig, SessionStarted

if TYPE_CHECKING:
    import logging

    from eventstore._effects import SessionEffects, SpillStore
    from eventstore._session import Session
    from eventstore._store import Head, Recorder, Snapshots
    from reducers import SessionState

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


def check_session_id(session_id: object) -> str:
    """``session_id`` if it is a usable id (it names spill folders), else InvalidEvent."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise InvalidEvent(
            f"session id {session_id!r}: use 1-128 of A-Z a-z 0-9 . _ : @ -, not starting with"
            " punctuation"
        )
    return session_id


class Journal:
    """An open journal. Not shared across threads: open one per thread.

    Opening one loads the backend alone: the session machinery (commands, decisions,
    the invariants, snapshots) is imported when a session is first made, so a process
    that opens a journal to list or read pays for what it uses.
    """

    recorder: Recorder
    path: Path | None  # the SQLite file, when there is one

    def __init__(
        self,
        location: str | Path,
        *,
        synchronous: str = "full",
        readonly: bool = False,
        snapshot_every: int = SNAPSHOT_EVERY,
        clock: Callable[[], str] = utc_now,
    ) -> None:
        _check_snapshot_every(snapshot_every)
        recorder, spills, path = _backend(location, synchronous, readonly, clock)
        self._attach(recorder, spills, snapshot_every)
        self.path = path

    @classmethod
    def of(
        cls, recorder: Recorder, spills: SpillStore, *, snapshot_every: int = SNAPSHOT_EVERY
    ) -> Journal:
        """A journal on a recorder and a spill store made by the caller."""
        _check_snapshot_every(snapshot_every)
        journal = cls.__new__(cls)
        journal._attach(recorder, spills, snapshot_every)
        return journal

    def _attach(self, recorder: Recorder, spills: SpillStore | _Later, every: int) -> None:
        self.recorder = recorder
        self._spills = spills
        self.path = None
        self.thread = threading.get_ident()  # the thread that opened it, and may use it
        self._snapshot_every = every

    @functools.cached_property
    def logger(self) -> logging.Logger:
        """The ``tierlog`` logger, which the journal's sessions log through (``logging``
        is loaded when a session first needs it)."""
        import logging

        return logging.getLogger("tierlog")

    @property
    def spills(self) -> SpillStore:
        """Where the journal's spills live: for a SQLite file, the folder beside it
        (``<db file>.spills/``), made on first use."""
        spills = self._spills
        if isinstance(spills, _Later):
            spills = self._spills = spills()
        return spills

    @functools.cached_property
    def snapshots(self) -> Snapshots:
        """The journal's snapshot cache (made, and its module loaded, on first use)."""
        from eventstore._store import Snapshots

        return Snapshots(self.recorder, self._snapshot_every, self.logger)

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection."""
        self.recorder.close()

    def sessions(self) -> list[str]:
        """Every session id in the journal, sorted."""
        return self.recorder.sessions()

    def has_session(self, session_id: str) -> bool:
        """Whether ``session_id`` names a session of this journal."""
        return self.recorder.head(check_session_id(session_id)).version > 0

    def start_session(self, session_id: str, config: SessionConfig) -> Session:
        """Start a new session; InvalidEvent if the id is taken."""
        check_session_id(session_id)
        if not isinstance(config, SessionConfig):
            raise InvalidArgument(f"config must be a SessionConfig, not {type(config).__name__}")
        from invariants import validate
        from reducers import SessionState, fold

        started = SessionStarted(**attrs.asdict(config))
        with self.recorder.transaction():
            if self.recorder.head(session_id).version:
                raise InvalidEvent(f"session {session_id!r} already exists")
            validate(SessionState(), started)
            self.recorder.append(session_id, [started], expected_version=0)
            written = self.recorder.head(session_id)  # the row just linked: held
        return self._session(session_id, fold([started]), None, written)

    def session(self, session_id: str) -> Session:
        """Reopen a session: its snapshot plus the events after it."""
        if not self.has_session(session_id):
            raise InvalidEvent(f"no session {session_id!r} in {self.recorder.location}")
        state, lengths = self.snapshots.load(session_id)
        return self._session(session_id, state, lengths)

    def replay_session(self, session_id: str) -> Session:
        """A session object that trusts nothing cached: its state starts empty."""
        from reducers import SessionState

        return self._session(session_id, SessionState(), None)

    def read_spill(self, session_id: str, handle: str) -> bytes:
        """The bytes of a spill the session recorded, checked against its sha256
        (InvalidEvent for a handle it never recorded, IntegrityError if they differ)."""
        return self.session(session_id).read_spill(handle)

    def effects(self, session_id: str) -> SessionEffects:
        """The effects decisions on ``session_id`` use: its turns and the spill store."""
        from eventstore._effects import SessionEffects

        return SessionEffects(self.recorder, session_id, self.spills)

    def _session(
        self,
        session_id: str,
        state: SessionState,
        lengths: dict[str, int] | None,
        anchor: Head | None = None,
    ) -> Session:
        from eventstore._session import Session

        return Session(
            session_id,
            state,
            recorder=self.recorder,
            effects=self.effects(session_id),
            snapshots=self.snapshots,
            logger=self.logger,
            snapshot_lengths=lengths,
            anchor=anchor,
        )


def _check_snapshot_every(snapshot_every: object) -> None:
    if type(snapshot_every) is not int or snapshot_every < 0:
        raise InvalidArgument(f"snapshot_every must be an integer >= 0, not {snapshot_every!r}")


def _backend(
    location: str | Path, synchronous: str, readonly: bool, clock: Callable[[], str]
) -> tuple[Recorder, SpillStore | _Later, Path | None]:
    """A recorder and spill store (or what makes it on first use) for a file path or a
    ``postgresql://`` URL."""
    check_location(location)
    if is_url(location):
        from eventstore._postgres import PostgresRecorder, TableSpills  # psycopg only when used

        if str(synchronous).lower() not in SYNCHRONOUS:
            raise InvalidArgument(f"synchronous must be 'full' or 'normal', not {synchronous!r}")
        pg = PostgresRecorder(
            str(location), readonly=readonly, clock=clock, synchronous=synchronous
        )
        return pg, TableSpills(pg), None
    sqlite = SqliteRecorder(location, synchronous=synchronous, readonly=readonly, clock=clock)
    return sqlite, _Later(sqlite), sqlite.path


class _Later:
    """The spill folder beside a SQLite journal, made when a session first needs it
    (its module is loaded then, not when the journal is opened)."""

    def __init__(self, sqlite: SqliteRecorder) -> None:
        self.sqlite = sqlite

    def __call__(self) -> SpillStore:
        from eventstore._store import FolderSpills

        return FolderSpills.beside(self.sqlite.path, on_write=self.sqlite.on_rollback)


def open(  # noqa: A001 - the SPEC's name
    path: str | Path,
    synchronous: str = "full",
    *,
    readonly: bool = False,
    snapshot_every: int = SNAPSHOT_EVERY,
    clock: Callable[[], str] = utc_now,
) -> Journal:
    """Open (creating if needed) the journal at ``path``: a SQLite file, or a
    ``postgresql://`` (``postgres://``) URL (needs ``pip install 'tierlog[postgres]'``).

    ``synchronous``: "full" (durable across power loss) or "normal" (across a
    process crash; on PostgreSQL, ``synchronous_commit = off``). ``readonly`` opens
    with ``mode=ro`` (a read-only session on PostgreSQL) and never creates anything.
    ``snapshot_every``: events between snapshots (0: never write one).
    """
    return Journal(
        path,
        synchronous=synchronous,
        readonly=readonly,
        snapshot_every=snapshot_every,
        clock=clock,
    )
