"""Obligations on the timeline: what carries and covers each, when it fell out, and
which routine ones are counted in bands rather than drawn one by one."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

import eventstore
from eventstore import Session
from eventstore._report._obligations import Carriers, Open, bands, is_routine, packed, pin
from eventstore._report._spans import Axis
from eventstore._report._timeline import ObligationPin
from tests.helpers import fill, new_session


def _open(kind: str, key: str, version: int, disposition: str = "") -> Open:
    return Open(kind=kind, key=key, detail="", version=version, disposition=disposition)


def _pin(**changes: Any) -> ObligationPin:
    """A pin raised at v1, position 0, ended at v5, covered by nothing."""
    base = ObligationPin(
        kind="open_call",
        key="c",
        detail="",
        position=0,
        extent=1,
        version=1,
        ended_at=5,
        ended="resolved: ok",
        carried_by=(),
        covered_by=(),
        fell_out_at=None,
        row=0,
        withdrawn_at=None,
    )
    return attrs.evolve(base, **changes)


def _compact(s: Session, hi: int, **carried: Any) -> str:
    node = s.compact(
        tier=1, input=(0, hi), covers=(0, hi), tail_start=hi, summary="s", tokens=1, **carried
    )
    return node.node_id


@pytest.fixture(name="session")
def _session(journal: eventstore.Journal) -> Session:
    """Four turns, a rejected plan and two calls (c1 resolved), all at turn 3."""
    s = new_session(journal)
    fill(s, 4)
    s.dispose("plan", "rejected", "slow")
    s.open_call("c1", "tool_call", "grep")
    s.open_call("c2", "tool_call", "ls")
    s.resolve_call("c1", "ok")
    return s


class TestCarriers:
    def test_a_negative_fact_is_carried_only_with_its_disposition(self, session: Session) -> None:
        """A node that records another disposition for the key does not carry the fact."""
        first = _compact(session, 2, dispositions={"plan": "rejected"})
        session.dispose("plan", "failed", "broke")
        fill(session, 1)
        second = _compact(session, 4, dispositions={"plan": "failed"}, replaces=[first])
        carriers = Carriers(session.state, [])
        assert carriers.carried(_open("negative_fact", "plan", 5, "rejected")) == (first,)
        assert carriers.carried(_open("negative_fact", "plan", 9, "failed")) == (second,)

    def test_a_call_is_carried_as_resolved_or_unresolved_oldest_node_first(
        self, session: Session
    ) -> None:
        """Both resolved_ids and unresolved_ids carry a call; carriers come in version order."""
        first = _compact(session, 2, resolved_ids=["c1"], unresolved_ids=["c2"])
        second = _compact(session, 3, resolved_ids=["c1"], unresolved_ids=["c2"], replaces=[first])
        carriers = Carriers(session.state, [])
        assert carriers.carried(_open("open_call", "c2", 7)) == (first, second)
        assert carriers.carried(_open("open_call", "c1", 6)) == (first, second)
        assert carriers.carried(_open("constraint", "c1", 6)) == ()

    def test_covered_means_inside_a_node_s_range(self, session: Session) -> None:
        """A node covers the positions in [covers_lo, covers_hi), not its end."""
        node = _compact(session, 2)
        carriers = Carriers(session.state, [])
        assert [carriers.covered(p) for p in (0, 1, 2, 3)] == [(node,), (node,), (), ()]


class TestPin:
    def test_an_obligation_falls_out_with_the_truncation_of_its_turn(
        self, session: Session
    ) -> None:
        """Raised before the truncation: it fell out then; raised later on a turn already
        truncated: it fell out as it was raised."""
        session.truncate(0, 4, "budget")
        session.state_constraint("late", "raised on a truncated turn")
        state = session.state
        carriers, axis = Carriers(state, []), Axis(state)
        cut_at = state.truncations[0].version
        assert pin(axis, _open("negative_fact", "plan", 6, "rejected"), carriers).fell_out_at == (
            cut_at
        )
        late = pin(axis, _open("constraint", "late", state.version), carriers)
        assert late.fell_out_at == state.version

    def test_an_untouched_obligation_never_fell_out(self, session: Session) -> None:
        """No truncation, no withdrawal: no version to show."""
        state = session.state
        p = pin(Axis(state), _open("open_call", "c2", 8), Carriers(state, []))
        assert (p.position, p.fell_out_at, p.withdrawn_at) == (3, None, None)


class TestRoutine:
    def test_ended_while_in_the_context_is_routine(self) -> None:
        """Ended before anything took its position out: counted, not drawn."""
        assert is_routine(_pin(fell_out_at=5, covered_by=("n",)), {"n": 6})

    @pytest.mark.parametrize(
        "changes",
        [
            {"ended_at": None},
            {"fell_out_at": 4},
            {"withdrawn_at": 3},
            {"covered_by": ("n",)},
        ],
    )
    def test_open_or_taken_out_before_its_end_is_drawn(self, changes: dict[str, Any]) -> None:
        """Still open, truncated, withdrawn or summarised before it ended: drawn alone."""
        assert not is_routine(_pin(**changes), {"n": 2})

    def test_bands_count_each_kind_by_position(self, session: Session) -> None:
        """Routine pins of one kind in one position band (here one turn wide) share a band
        that keeps their keys and versions; bands come sorted by kind, then position."""
        pins = [
            _pin(key="a", position=0),
            _pin(key="b", position=3, version=2, ended_at=7),
            _pin(key="c", position=3, version=3, ended_at=8),
            _pin(kind="constraint", key="k", position=3),
        ]
        found = [
            (b.kind, b.lo, b.hi, b.keys, b.raised, b.ended) for b in bands(session.state, pins)
        ]
        assert found == [
            ("constraint", 3, 4, ("k",), (1,), (5,)),
            ("open_call", 0, 1, ("a",), (1,), (5,)),
            ("open_call", 3, 4, ("b", "c"), (2, 3), (7, 8)),
        ]


class TestPacked:
    def test_few_pins_get_a_row_each(self) -> None:
        """Up to 24 pins: one row each, in the order given (labels stay readable)."""
        pins = [_pin(key=str(i), position=i, extent=i + 1) for i in range(24)]
        assert [p.row for p in packed(pins)] == list(range(24))

    def test_many_pins_share_rows_where_they_do_not_overlap(self) -> None:
        """Past 24, pins are packed: disjoint ones share a row, overlapping ones do not."""
        pins = [_pin(key=str(i), position=i, extent=i + 1) for i in range(30)]
        pins.append(_pin(key="wide", position=0, extent=30))
        rows = [p.row for p in packed(pins)]
        assert rows == [0] * 30 + [1]
