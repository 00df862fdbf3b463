"""Positions and spans for the timeline builder: pure helpers, no I/O.

:class:`Axis` answers position look-ups on a folded state's turn boundaries;
:func:`first_covered` splits ranges into the parts each was first to cover;
:func:`pack_rows` packs spans into rows; :func:`cut` shortens long text for the page.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from reducers import SessionState, merge_spans


class Axis:
    """A folded state's turn boundaries as plain lists, for many position look-ups."""

    def __init__(self, state: SessionState) -> None:
        self.by_turn = state.unit == "turns"
        self.versions = list(state.turn_versions)
        self.starts = list(state.tok_starts)
        self.turns = state.turns
        self.end = state.end

    def position_of_turn(self, index: int) -> int:
        """Turn ``index``'s start (``SessionState.position_of_turn``)."""
        return index if self.by_turn else self.starts[index]

    def turn_index(self, position: int) -> int:
        """The turn starting at ``position`` (``SessionState.turn_index``)."""
        return position if self.by_turn else bisect.bisect_left(self.starts, position)

    def position_at(self, version: int) -> int:
        """Where the fold put an obligation raised by the ``version``-th event: the start
        of the last turn appended before it (``SessionState.last_position`` then)."""
        before = bisect.bisect_left(self.versions, version)  # turns appended before it
        return self.position_of_turn(before - 1) if before else 0

    def turn_end(self, position: int) -> int:
        """The end of the turn starting at ``position`` (``position`` with no turns)."""
        if not self.turns:
            return position
        index = min(self.turn_index(position), self.turns - 1)
        return self.position_of_turn(index + 1) if index + 1 < self.turns else self.end


def cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and how many more there were."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more chars)"


def pack_rows(spans: Iterable[tuple[int, int]]) -> list[int]:
    """Greedy interval packing: the row of each span (in the order given, sorted by start)."""
    ends: list[int] = []
    out = []
    for lo, hi in spans:
        row = next((i for i, end in enumerate(ends) if end <= lo), len(ends))
        if row == len(ends):
            ends.append(hi)
        ends[row] = max(hi, lo + 1)
        out.append(row)
    return out


def first_covered(
    ranges: Iterable[tuple[int, int, int]],
) -> list[tuple[int, int, int]]:
    """Disjoint ``(lo, hi, version)``: where each range, in version order, first covered."""
    covered: tuple[tuple[int, int], ...] = ()
    out = []
    for lo, hi, version in sorted(ranges, key=lambda r: r[2]):
        at = lo
        for c_lo, c_hi in covered:
            if c_hi <= at or c_lo >= hi:
                continue
            if c_lo > at:
                out.append((at, c_lo, version))
            at = max(at, c_hi)
        if at < hi:
            out.append((at, hi, version))
        covered = merge_spans([*covered, (lo, hi)])
    return sorted(out)


def covered_at(pieces: list[tuple[int, int, int]], i: int) -> int | None:
    k = bisect.bisect_right(pieces, (i, float("inf"), 0)) - 1
    return pieces[k][2] if k >= 0 and pieces[k][0] <= i < pieces[k][1] else None


def by_version(found: list[tuple[int, int, int]]) -> dict[int, tuple[tuple[int, int], ...]]:
    out: dict[int, list[tuple[int, int]]] = {}
    for lo, hi, version in found:
        out.setdefault(version, []).append((lo, hi))
    return {version: tuple(spans) for version, spans in out.items()}
