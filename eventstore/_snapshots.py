"""The snapshot cache, in one place: when to take one, encode, load, check.

A snapshot is a cache of reduced state that replay must agree with. It is
taken inside the commit that reaches the next multiple of ``every`` events,
rewriting only the ledger chunks that changed; it is used on reopen only when
it decodes and is not ahead of its log, and is otherwise ignored (with a
warning) and the session replayed. ``verify`` compares it with the replay.
"""

from __future__ import annotations

import logging

import attrs

from eventstore._recorder import Recorder
from reducers import SessionState, chunk_rows, from_snapshot, ledger_lengths, to_snapshot

SNAPSHOT_EVERY = 1000


@attrs.define
class Snapshots:
    """The snapshot policy of one journal."""

    recorder: Recorder
    every: int
    logger: logging.Logger

    def load(self, session_id: str) -> tuple[SessionState, dict[str, int]]:
        """The cached state and its ledger lengths, or the empty state when there is
        none or it cannot be trusted."""
        found = self.recorder.load_snapshot(session_id)
        if found is None:
            return SessionState(), {}
        try:
            state = from_snapshot(found.header, chunk_rows(found.chunks))
        except (ValueError, TypeError, KeyError) as exc:
            self.logger.warning("snapshot of %s unreadable, replaying: %s", session_id, exc)
            return SessionState(), {}
        head = self.recorder.head(session_id).version
        if state.version != found.version or found.version > head:
            self.logger.warning("snapshot of %s is ahead of its log, replaying", session_id)
            return SessionState(), {}
        return state, ledger_lengths(state)

    def due(self, state: SessionState, last: int) -> bool:
        """Whether a commit reaching ``state`` takes a snapshot (the last was at ``last``)."""
        return bool(self.every) and state.version - last >= self.every

    def save(
        self, session_id: str, state: SessionState, since: dict[str, int] | None = None
    ) -> dict[str, int]:
        """Cache ``state`` (joins the open transaction); returns its ledger lengths."""
        header, chunks = to_snapshot(state, since)
        self.recorder.save_snapshot(session_id, state.version, state.sha256, header, chunks)
        return ledger_lengths(state)
