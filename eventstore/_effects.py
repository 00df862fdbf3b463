"""The effects a decision needs, behind one small interface.

A decision reads raw turns back (to render a context or fill a spill) and writes
and checks spills. ``Effects`` is that interface; ``SessionEffects`` is the real
one (turns from the recorder, spill bytes in the journal's ``SpillStore``),
``RecordedSpills`` the one ``verify`` uses, which writes nothing. Where spills
live is the journal's business: a folder beside a SQLite file (``FolderSpills``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from eventstore._files import file_problem, render_turns, write_atomically
from reducers import InvalidEvent, SessionState, Spill, Spilled


class SpillStore(Protocol):
    """Where spill bytes are kept, by handle."""

    def handle(self, session_id: str, version: int, lo: int, hi: int) -> str:
        """The handle a spill of ``[lo, hi)`` written at ``version`` gets."""

    def write(self, handle: str, data: bytes) -> None:
        """Store ``data`` durably under ``handle``."""

    def problem(self, handle: str, sha256: str, size: int) -> str | None:
        """Why ``handle`` does not hold exactly the recorded bytes, or ``None``."""


class FolderSpills:
    """Spill files in ``<db file>.spills/`` beside a SQLite journal."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path

    def handle(self, session_id: str, version: int, lo: int, hi: int) -> str:
        """``<db>.spills/<session>/v<version>_<lo>-<hi>.jsonl``, relative to the db's folder."""
        return f"{self.db_path.name}.spills/{session_id}/v{version:08d}_{lo}-{hi}.jsonl"

    def write(self, handle: str, data: bytes) -> None:
        """Write the file atomically and durably."""
        write_atomically(self.db_path.parent / handle, data)

    def problem(self, handle: str, sha256: str, size: int) -> str | None:
        """Why the file is missing or differs from its recorded size and sha256."""
        return file_problem(self.db_path.parent / handle, sha256, size)


class Effects(Protocol):
    """What ``decide`` may do beyond computing: read turns, write and check spills."""

    def turns(
        self, state: SessionState, ranges: Iterable[tuple[int, int]]
    ) -> Iterator[dict[str, Any]]:
        """The raw turns of ``state`` in the given index ranges, in order."""

    def write_spill(self, state: SessionState, lo: int, hi: int) -> Spilled:
        """Copy the raw range ``[lo, hi)`` of ``state`` to the spill store (no commit)."""

    def spill_problem(self, spill: Spill | Spilled) -> str | None:
        """Why a spill no longer holds its recorded bytes, or ``None``."""


class _TurnSource(Protocol):
    def turn_payloads(self, session_id: str, first: int, last: int) -> Iterator[str]: ...


class SessionEffects:
    """The effects of one session of a journal: its recorder and its spill store."""

    def __init__(self, recorder: _TurnSource, session_id: str, spills: SpillStore) -> None:
        self.recorder = recorder
        self.session_id = session_id
        self.spills = spills

    def turns(
        self, state: SessionState, ranges: Iterable[tuple[int, int]]
    ) -> Iterator[dict[str, Any]]:
        """Raw turns read back by the versions the state recorded for them."""
        versions = state.turn_versions
        for lo, hi in ranges:
            if lo < hi:
                payloads = self.recorder.turn_payloads(
                    self.session_id, versions[lo], versions[hi - 1]
                )
                yield from map(json.loads, payloads)

    def write_spill(self, state: SessionState, lo: int, hi: int) -> Spilled:
        """Write the turns of ``[lo, hi)`` (those at the log's end included) as a spill."""
        data = render_turns(self.turns(state, [(state.turn_index(lo), state.turn_stop(hi))]))
        handle = self.spills.handle(self.session_id, state.version + 1, lo, hi)
        self.spills.write(handle, data)
        digest = hashlib.sha256(data).hexdigest()
        return Spilled(lo=lo, hi=hi, handle=handle, sha256=digest, bytes=len(data))

    def spill_problem(self, spill: Spill | Spilled) -> str | None:
        """Why the spill's bytes are missing or changed, or ``None``."""
        return self.spills.problem(spill.handle, spill.sha256, spill.bytes)


class RecordedSpills:
    """``verify``'s effects: turns and checks as usual, but a spill due is the one
    recorded in the log, and nothing is written."""

    def __init__(self, effects: Effects, recorded: Spilled | None) -> None:
        self._effects = effects
        self._recorded = recorded

    def turns(
        self, state: SessionState, ranges: Iterable[tuple[int, int]]
    ) -> Iterator[dict[str, Any]]:
        """As the wrapped effects."""
        return self._effects.turns(state, ranges)

    def write_spill(self, state: SessionState, lo: int, hi: int) -> Spilled:
        """The recorded spill of ``[lo, hi)``; InvalidEvent if the log has none here."""
        spill = self._recorded
        if spill is None or (spill.lo, spill.hi) != (lo, hi):
            raise InvalidEvent(f"a spill of [{lo}, {hi}) is due here but none was recorded")
        return spill

    def spill_problem(self, spill: Spill | Spilled) -> str | None:
        """As the wrapped effects."""
        return self._effects.spill_problem(spill)
