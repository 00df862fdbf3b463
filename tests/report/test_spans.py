"""The timeline builder's position helpers: the axis of turn boundaries, cut text, rows."""

from __future__ import annotations

import attrs
import pytest

import reducers as r
from eventstore._report._spans import Axis, by_version, covered_at, cut, pack_rows
from tests.helpers import config


def _axis(unit: str, tokens: tuple[int, ...], calls_before: int = 0) -> Axis:
    """The axis of a session of turns of ``tokens``, after ``calls_before`` calls."""
    started = r.SessionStarted(**attrs.asdict(config(truncator_unit=unit, floor_unit=unit)))
    calls = [r.CallOpened(call_id=f"c{i}", kind="tool_call", name="g") for i in range(calls_before)]
    turns = [
        r.TurnAppended(index=i, role="user", content="x", tokens=n) for i, n in enumerate(tokens)
    ]
    return Axis(r.fold([started, *calls, *turns]))


class TestAxis:
    def test_token_positions_are_turn_starts(self) -> None:
        """In a token session, turn i sits at the tokens before it, and back again."""
        axis = _axis("tokens", (10, 25, 5))
        assert [axis.position_of_turn(i) for i in range(3)] == [0, 10, 35]
        assert [axis.turn_index(p) for p in (0, 10, 35)] == [0, 1, 2]

    def test_turn_positions_are_indices(self) -> None:
        """In a turn session a position is the turn's index."""
        axis = _axis("turns", (10, 25, 5))
        assert [axis.position_of_turn(i) for i in range(3)] == [0, 1, 2]

    def test_an_obligation_sits_at_the_last_turn_before_it(self) -> None:
        """Raised by version v, it sits at the start of the last turn appended before v;
        before any turn, at 0 (the fold's own rule)."""
        axis = _axis("tokens", (10, 25, 5), calls_before=2)  # v2, v3: calls; v4-v6: turns
        assert [axis.position_at(v) for v in (2, 3, 4, 5, 6, 7)] == [0, 0, 0, 0, 10, 35]

    def test_a_turn_ends_where_the_next_starts_the_last_at_the_end(self) -> None:
        """turn_end is the next turn's start, the session's end for the last turn."""
        axis = _axis("tokens", (10, 25, 5))
        assert [axis.turn_end(p) for p in (0, 10, 35)] == [10, 35, 40]

    def test_without_turns_a_position_ends_where_it_starts(self) -> None:
        """A session with no turn yet has no extent to give."""
        assert _axis("tokens", ()).turn_end(0) == 0


class TestCut:
    def test_short_text_is_whole(self) -> None:
        """Text of at most ``limit`` characters is returned as it is."""
        assert cut("abc", 3) == "abc"

    def test_long_text_says_how_much_was_cut(self) -> None:
        """Past ``limit``, the first ``limit`` characters and the count left out."""
        assert cut("a" * 1_234 + "b", 3) == "aaa\u2026 (1,232 more chars)"


class TestPackRows:
    def test_disjoint_spans_share_a_row(self) -> None:
        """Spans that touch but do not overlap sit on one row."""
        assert pack_rows([(0, 5), (5, 9), (9, 12)]) == [0, 0, 0]

    def test_overlapping_spans_take_the_first_free_row(self) -> None:
        """A span goes to the first row whose last span ended at or before its start."""
        assert pack_rows([(0, 10), (2, 4), (4, 6), (10, 12)]) == [0, 1, 1, 0]

    def test_an_empty_span_still_takes_room(self) -> None:
        """A zero-width span is drawn one unit wide, so a span at its start goes below."""
        assert pack_rows([(3, 3), (3, 5)]) == [0, 1]


PIECES = [(0, 5, 2), (5, 8, 1), (8, 20, 2)]


class TestCoveredAt:
    @pytest.mark.parametrize(("i", "version"), [(0, 2), (4, 2), (5, 1), (7, 1), (19, 2)])
    def test_a_position_gets_its_piece_s_version(self, i: int, version: int) -> None:
        """The version of the piece that holds position ``i``."""
        assert covered_at(PIECES, i) == version

    @pytest.mark.parametrize("i", [-1, 20, 99])
    def test_outside_every_piece_is_none(self, i: int) -> None:
        """A position no piece holds was never covered."""
        assert covered_at(PIECES, i) is None

    def test_pieces_grouped_by_version(self) -> None:
        """by_version lists each version's pieces in the order found."""
        assert by_version(PIECES) == {2: ((0, 5), (8, 20)), 1: ((5, 8),)}
