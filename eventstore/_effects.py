"""The effects a decision needs, behind one small interface.

A decision reads raw turns back (to render a context or fill a spill) and writes
and checks spills. ``Effects`` is that interface; ``SessionEffects`` is the real
one (turns from the recorder, spill bytes in the journal's ``SpillStore``),
``RecordedSpills`` the one ``verify`` uses, which writes nothing. Where spills
live is the journal's business: a folder beside a SQLite file (``FolderSpills``
in ``_spills``: content-addressed, chained, every read checked).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

from eventstore._files import render_turns
from reducers import InvalidEvent, SessionState, Spill, Spilled

SpillCheck = Callable[[Spill | Spilled], str | None]


class SpillStore(Protocol):
    """Where spill bytes are kept: write, read back, check."""

    def write(self, data: bytes, *, lo: int, hi: int, earlier: Iterable[Spill]) -> Spilled:
        """Store ``data`` (the raw range ``[lo, hi)``) durably; the event recording it.
        ``earlier`` spills may be reused; JournalError if it cannot be written."""

    def read(self, spill: Spill | Spilled) -> bytes:
        """The spill's bytes, checked (IntegrityError when they do not read back)."""

    def adopt(self, spill: Spill | Spilled, data: bytes, earlier: Iterable[Spill] = ()) -> None:
        """Store bytes recorded elsewhere under their recorded handle (``tierlog ship``);
        IntegrityError if they are not the recorded bytes."""

    def problem(self, spill: Spill | Spilled) -> str | None:
        """Why the spill does not read back as its recorded bytes, or ``None``."""

    def checker(self) -> SpillCheck:
        """``problem`` for one pass over many spills (shared files read once)."""

    @property
    def location(self) -> str:
        """Where the spills live, for messages."""

    orphan_hint: str  # how an orphan can be removed, for verify's note

    def orphans(self, handles: Iterable[str]) -> list[str]:
        """Stored items no recorded handle (nor a base of one) uses."""

    def remove(self, names: Iterable[str]) -> None:
        """Remove items ``orphans`` named."""


@runtime_checkable
class Extends(Protocol):
    """A spill store that can add to a spill it wrote or read back without reading it
    again (``FolderSpills``): what keeps a refusal's cost off the log's length."""

    def write_after(self, base: Spill, tail: bytes, *, lo: int, hi: int) -> Spilled | None:
        """The spill of ``base``'s bytes then ``tail``, or ``None``: write it whole."""


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

    def spill_checker(self) -> SpillCheck:
        """``spill_problem`` for one pass over many spills."""

    def read_spill(self, spill: Spill | Spilled) -> bytes:
        """A spill's bytes, checked against its recorded size and sha256."""


class _TurnSource(Protocol):
    def turn_payloads(self, session_id: str, first: int, last: int) -> Iterator[str]: ...


class SessionEffects:
    """The effects of one session of a journal: its recorder and its spill store."""

    def __init__(self, recorder: _TurnSource, session_id: str, spills: SpillStore) -> None:
        self.recorder = recorder
        self.session_id = session_id
        self.spills = spills
        self._last: tuple[Spilled, int, int] | None = None  # a spill written, its turns

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
        """Write the turns of ``[lo, hi)`` (those at the log's end included) as a spill.

        When the session's newest spill is the last one written here, from the same
        turn, and this range holds its turns, only the turns after them are read and
        rendered (a refusal that spills the transcript again costs what it adds).
        """
        first, stop = state.turn_index(lo), state.turn_stop(hi)
        spilled = self._write_after(state, lo, hi, first, stop)
        if spilled is None:
            data = render_turns(self.turns(state, [(first, stop)]))
            spilled = self.spills.write(data, lo=lo, hi=hi, earlier=state.spills)
        self._last = (spilled, first, stop)
        return spilled

    def _write_after(
        self, state: SessionState, lo: int, hi: int, first: int, stop: int
    ) -> Spilled | None:
        """The spill written on the last one, or ``None`` where it cannot be.

        Sound because the newest spill is committed (it is in ``state``): its bytes are
        the rendering of the turns ``[first, done)`` of this log, which never change.
        """
        last, spills = self._last, state.spills
        if last is None or not spills or not isinstance(self.spills, Extends):
            return None
        written, start, done = last
        newest = spills[-1]
        if (newest.handle, newest.lo, start) != (written.handle, lo, first) or done > stop:
            return None
        tail = render_turns(self.turns(state, [(done, stop)]))
        return self.spills.write_after(newest, tail, lo=lo, hi=hi)

    def spill_problem(self, spill: Spill | Spilled) -> str | None:
        """Why the spill's bytes are missing or changed, or ``None``."""
        return self.spills.problem(spill)

    def spill_checker(self) -> SpillCheck:
        """One pass of spill checks."""
        return self.spills.checker()

    def read_spill(self, spill: Spill | Spilled) -> bytes:
        """The spill's bytes, checked."""
        return self.spills.read(spill)


class SpillNotRecorded(InvalidEvent):
    """A decision re-derived by ``verify`` spills here, and the log recorded no spill."""


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
            raise SpillNotRecorded(f"a spill of [{lo}, {hi}) is due here but none was recorded")
        return spill

    def spill_problem(self, spill: Spill | Spilled) -> str | None:
        """As the wrapped effects."""
        return self._effects.spill_problem(spill)

    def spill_checker(self) -> SpillCheck:
        """As the wrapped effects."""
        return self._effects.spill_checker()

    def read_spill(self, spill: Spill | Spilled) -> bytes:
        """As the wrapped effects."""
        return self._effects.read_spill(spill)
