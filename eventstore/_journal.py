"""The Journal: one database, many sessions; it owns the recorder, spills and snapshots."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import attrs

from eventstore._effects import SessionEffects, SpillStore
from eventstore._recorder import Recorder
from eventstore._session import Session
from eventstore._snapshots import SNAPSHOT_EVERY, Snapshots
from eventstore._spills import FolderSpills
from eventstore._sqlite import SqliteRecorder, utc_now
from invariants import validate
from reducers import InvalidEvent, SessionConfig, SessionStarted, SessionState, fold

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
    """An open journal. Not shared across threads: open one per thread."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "full",
        readonly: bool = False,
        snapshot_every: int = SNAPSHOT_EVERY,
        clock: Callable[[], str] = utc_now,
    ) -> None:
        if type(snapshot_every) is not int or snapshot_every < 0:
            raise InvalidEvent(f"snapshot_every must be an integer >= 0, not {snapshot_every!r}")
        sqlite = SqliteRecorder(path, synchronous=synchronous, readonly=readonly, clock=clock)
        self.recorder: Recorder = sqlite
        self.path = sqlite.path
        self.spills: SpillStore = FolderSpills.beside(sqlite.path, on_write=sqlite.on_rollback)
        self.logger = logging.getLogger("tierlog")
        self.snapshots = Snapshots(self.recorder, snapshot_every, self.logger)

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
            raise InvalidEvent(f"config must be a SessionConfig, not {type(config).__name__}")
        started = SessionStarted(**attrs.asdict(config))
        with self.recorder.transaction():
            if self.recorder.head(session_id).version:
                raise InvalidEvent(f"session {session_id!r} already exists")
            validate(SessionState(), started)
            self.recorder.append(session_id, [started], expected_version=0)
        return self._session(session_id, fold([started]), None)

    def session(self, session_id: str) -> Session:
        """Reopen a session: its snapshot plus the events after it."""
        if not self.has_session(session_id):
            raise InvalidEvent(f"no session {session_id!r} in {self.recorder.location}")
        state, lengths = self.snapshots.load(session_id)
        return self._session(session_id, state, lengths)

    def replay_session(self, session_id: str) -> Session:
        """A session object that trusts nothing cached: its state starts empty."""
        return self._session(session_id, SessionState(), None)

    def effects(self, session_id: str) -> SessionEffects:
        """The effects decisions on ``session_id`` use: its turns and the spill store."""
        return SessionEffects(self.recorder, session_id, self.spills)

    def _session(
        self, session_id: str, state: SessionState, lengths: dict[str, int] | None
    ) -> Session:
        return Session(
            session_id,
            state,
            recorder=self.recorder,
            effects=self.effects(session_id),
            snapshots=self.snapshots,
            logger=self.logger,
            snapshot_lengths=lengths,
        )


def open(  # noqa: A001 - the SPEC's name
    path: str | Path,
    synchronous: str = "full",
    *,
    readonly: bool = False,
    snapshot_every: int = SNAPSHOT_EVERY,
    clock: Callable[[], str] = utc_now,
) -> Journal:
    """Open (creating if needed) the journal at ``path``.

    ``synchronous``: "full" (durable across power loss) or "normal" (across a
    process crash). ``readonly`` opens with ``mode=ro`` and never creates the file.
    ``snapshot_every``: events between snapshots (0: never write one).
    """
    return Journal(
        path,
        synchronous=synchronous,
        readonly=readonly,
        snapshot_every=snapshot_every,
        clock=clock,
    )
