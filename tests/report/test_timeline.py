"""The report's timeline model: built from the fold, and equal to ``state --at`` everywhere."""

from __future__ import annotations

import itertools
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from hypothesis import given

import eventstore
import reducers as r
from eventstore._report._build import (
    DETAIL_TURNS,
    MAX_PINS,
    NAME,
    SUMMARY,
    TEXT,
    build,
)
from eventstore._report._spans import first_covered
from eventstore._report._timeline import Timeline, View, view_at
from eventstore.cli._demo import run_demo
from tests import strategies
from tests.helpers import config, fill, new_session, run_step
from tests.timelines import LONG, LONG_KEY, expected, long_text_session, withdrawal_session


def _agree(view: View, state: r.SessionState) -> None:
    want = expected(state)
    assert view.turn_status == want.turn_status
    assert dict(view.nodes) == want.nodes
    assert dict(view.markers) == want.markers
    assert dict(view.obligations) == want.obligations
    assert (view.occupancy, view.depth, view.tail_start) == (
        want.occupancy,
        want.depth,
        want.tail_start,
    )


def _every_version(s: eventstore.Session, timeline: Timeline) -> None:
    assert timeline.version == s.state.version
    for v in range(timeline.version + 1):
        _agree(view_at(timeline, v), s.state_at(v))


@pytest.fixture(name="demo", scope="module")
def _demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[eventstore.Journal]:
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    logging.getLogger("tierlog").setLevel(logging.ERROR)
    run_demo(db, lambda _: None)
    logging.getLogger("tierlog").setLevel(logging.NOTSET)
    with eventstore.open(db, readonly=True) as journal:
        yield journal


class TestViewAt:
    @pytest.mark.parametrize(
        "sid",
        [
            "incident-1-dropped-rejection",
            "incident-1-depth-change",
            "incident-2-evicted-constraint",
            "incident-2-units-agree",
        ],
    )
    def test_demo_sessions_agree_with_the_fold_at_every_version(
        self, demo: eventstore.Journal, sid: str
    ) -> None:
        """Turns, nodes, markers, obligations and occupancy match state_at(v) for every v."""
        s = demo.session(sid)
        _every_version(s, build(sid, s.events()))

    @given(steps=strategies.scripts(), unit=strategies.st.sampled_from(r.UNITS))
    def test_random_sessions_agree_with_the_fold(
        self, steps: list[strategies.Step], unit: str
    ) -> None:
        """Any script of API calls (refusals included): the view equals the fold everywhere."""
        with (
            tempfile.TemporaryDirectory() as tmp,
            eventstore.open(Path(tmp) / "p.db", synchronous="normal") as j,
        ):
            s = j.start_session(
                "p", config(truncator_unit=unit, floor_unit=unit, on_unsafe="spill", floor_span=3)
            )
            for kind, params in steps:
                run_step(s, kind, params)
            _every_version(s, build("p", s.events()))

    @pytest.mark.parametrize("unit", r.UNITS)
    def test_withdrawals_agree_with_the_fold_at_every_version(
        self, journal: eventstore.Journal, unit: str
    ) -> None:
        """Retracted and cleared turns, the cleared summary, the markers the withdrawals
        broke and the obligations they took out match state_at(v) for every v."""
        s = withdrawal_session(journal, unit=unit)
        _every_version(s, build("w", s.events()))

    def test_outside_the_log_is_an_error(self, journal: eventstore.Journal) -> None:
        """A version past the head is refused, like state --at."""
        s = new_session(journal)
        with pytest.raises(ValueError, match=r"outside 0\.\.1"):
            view_at(build("s", s.events()), 2)


class TestBuild:
    def test_incident_1_shows_the_refused_marker_and_the_dropped_rejection(
        self, demo: eventstore.Journal
    ) -> None:
        """The marker is refused by M2 and the rejection is dropped by the live digest."""
        s = demo.session("incident-1-dropped-rejection")
        t = build(s.id, s.events())
        (marker,) = t.markers
        (node,) = t.nodes
        assert (marker.refused, [v.rule for v in marker.violations]) == (True, ["M2"])
        assert marker.position == node.hi == s.state.nodes[node.node_id].covers_hi
        view = view_at(t, t.version)
        assert view.obligations["negative_fact", "add-column-then-backfill"] == "dropped"

    def test_obligations_sit_where_the_fold_put_them(self, journal: eventstore.Journal) -> None:
        """Each obligation's position is the one the fold gave it when it was raised."""
        s = new_session(journal, truncator_unit="tokens", floor_unit="tokens")
        s.state_constraint("k0", "before any turn")
        fill(s, 3, tokens=7)
        s.open_call("c1", "tool_call", "grep")
        fill(s, 2, tokens=5)
        s.dispose("d1", "failed", "no")
        positions = {(o.kind, o.key): o.position for o in build("s", s.events()).obligations}
        st = s.state
        assert positions == {
            ("constraint", "k0"): st.constraints["k0"].position,
            ("open_call", "c1"): st.open_calls["c1"].position,
            ("negative_fact", "d1"): st.dispositions["d1"].position,
        }

    def test_replaced_node_and_invalidated_marker_carry_their_versions(
        self, demo: eventstore.Journal
    ) -> None:
        """n17 is replaced at the version of n20, and m18 invalidated by the event after it."""
        s = demo.session("incident-1-depth-change")
        t = build(s.id, s.events())
        events = list(s.events())
        (l2,) = [n for n in t.nodes if n.tier == 2]
        (l1,) = [n for n in t.nodes if n.tier == 1]
        (marker,) = t.markers
        assert l1.replaced_at == l2.version
        assert l1.replaced_by == l2.node_id
        assert marker.invalidated_at is not None
        assert isinstance(events[marker.invalidated_at - 1], r.MarkerInvalidated)

    @pytest.mark.parametrize("unit", r.UNITS)
    def test_withdrawals_carry_their_versions_turns_nodes_and_markers(
        self, journal: eventstore.Journal, unit: str
    ) -> None:
        """Each retraction and the clear name their event, turns and positions, the
        summary the clear took out and the markers they broke; marks know when."""
        s = withdrawal_session(journal, unit=unit)
        events = list(s.events())
        t = build("w", events)
        found: list[tuple[int, str, int, int, str]] = []  # version, kind, first, stop, reason
        for v, e in enumerate(events, 1):
            if isinstance(e, r.TurnRetracted):
                found.append((v, "retraction", e.index, e.index + 1, e.reason))
            elif isinstance(e, r.ContextCleared):
                found.append((v, "clear", 0, e.before, e.reason))
        assert [(w.version, w.kind, w.first, w.stop, w.reason) for w in t.withdrawals] == found
        st = s.state
        for w in t.withdrawals:
            assert (w.lo, w.hi) == (st.position_of_turn(w.first), st.position_of_turn(w.stop))
        clear = t.withdrawals[3]
        (cleared,) = [n for n in t.nodes if n.cleared_at is not None]
        assert (clear.kind, clear.nodes, cleared.cleared_at) == ("clear", (cleared.node_id,), 19)
        assert cleared.replaced_at is None
        pieces = sorted(p for w in t.withdrawals for p in w.pieces)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(pieces))  # never overlap
        assert r.merge_spans(pieces) == st.withdrawn_positions
        for w in t.withdrawals:
            for marker_id in w.invalidated:
                (m,) = [m for m in t.markers if m.marker_id == marker_id]
                assert m.invalidated_at is not None
                assert m.invalidated_at > w.version
                broke = events[m.invalidated_at - 1]
                assert isinstance(broke, r.MarkerInvalidated)
                assert broke.reason.startswith(
                    f"{type(events[w.version - 1]).__name__} at v{w.version}"
                )
        assert [w.invalidated for w in t.withdrawals] == [(), (), (), ("m16",), ("m25",)]
        pins = {o.key: o for o in t.obligations}
        assert (pins["c1"].withdrawn_at, pins["k1"].withdrawn_at) == (9, 9)
        assert pins["c2"].withdrawn_at == 27
        # d1 sits at the last turn; in tokens that turn is empty, so no clear takes it
        took_d1 = r.in_spans(s.state_at(19).withdrawn_positions, pins["d1"].position)
        assert pins["d1"].withdrawn_at == (19 if took_d1 else None)
        assert took_d1 == (unit == "turns")

    def test_a_truncated_turn_stays_truncated_when_withdrawn(
        self, journal: eventstore.Journal
    ) -> None:
        """Truncation shows over withdrawal, withdrawal over a live summary's coverage."""
        s = withdrawal_session(journal)
        t = build("w", s.events())
        (run,) = [run for run in t.runs if run.lo == 0]
        assert (run.truncated_at, run.withdrawn_at) == (6, 10)
        view = view_at(t, 16)  # n15 live over turns 0-5, turns 0 and 3 retracted
        assert view.turn_status[:6] == (
            "truncated",
            "summarised",
            "summarised",
            "withdrawn",
            "summarised",
            "summarised",
        )
        assert view_at(t, 17).turn_status[5] == "withdrawn"

    def test_obligations_withdrawn_before_they_ended_are_never_banded(
        self, journal: eventstore.Journal
    ) -> None:
        """Past the pin limit, a call whose turn was retracted while open is drawn; one
        retracted after it was resolved is routine."""
        s = new_session(journal)
        batch: list[r.Event] = []
        for i in range(MAX_PINS + 1):
            batch.append(r.TurnAppended(index=i, role="tool", content=f"out {i}", tokens=3))
            batch.append(r.CallOpened(call_id=f"c{i}", kind="tool_call", name="grep"))
            batch.append(r.CallResolved(call_id=f"c{i}", outcome="ok"))
        s.extend(batch)
        s.retract_turn(MAX_PINS, "pop_item")  # c60 was resolved before: still routine
        s.append_turn("tool", "late", 3)
        s.open_call("late", "tool_call", "cat")
        s.retract_turn(MAX_PINS + 1, "pop_item")
        s.resolve_call("late", "ok")
        t = build("s", s.events())
        assert [o.key for o in t.obligations] == ["late"]
        assert sum(len(b.raised) for b in t.routine) == MAX_PINS + 1
        for v in range(t.version - 5, t.version + 1):
            _agree(view_at(t, v), s.state_at(v))
        assert view_at(t, t.version - 1).obligations["open_call", "late"] == "dropped"

    def test_large_sessions_are_described_by_runs_and_bands(
        self, journal: eventstore.Journal
    ) -> None:
        """Past the limits, turns lose their details and routine calls are banded."""
        s = new_session(journal)
        batch: list[r.Event] = []
        for i in range(DETAIL_TURNS + 1):
            batch.append(r.TurnAppended(index=i, role="tool", content=f"out {i}", tokens=3))
            if i <= MAX_PINS:
                batch.append(r.CallOpened(call_id=f"c{i}", kind="tool_call", name="grep"))
                batch.append(r.CallResolved(call_id=f"c{i}", outcome="ok"))
        batch.append(r.CallOpened(call_id="late", kind="tool_call", name="cat"))
        batch.append(r.Truncated(lo=0, hi=10, reason="budget"))
        s.extend(batch)
        t = build("s", s.events())
        assert (t.turn_info, len(t.runs)) == ((), 2)
        assert sum(len(b.raised) for b in t.routine) == MAX_PINS + 1
        keys = [key for b in t.routine for key in b.keys]
        assert keys == [f"c{i}" for i in range(MAX_PINS + 1)]  # each with its raise version
        assert [o.key for o in t.obligations] == ["late"]
        for v in (0, 500, t.version - 1, t.version):
            view = view_at(t, v)
            _agree(view, s.state_at(v))
            assert view.routine_open == 0

    def test_long_content_is_cut_for_the_page(self, journal: eventstore.Journal) -> None:
        """A turn keeps a preview of its content, saying how much was left out."""
        s = new_session(journal)
        s.append_turn("user", "x" * 1_000, 5)
        (info,) = build("s", s.events()).turn_info
        assert info.preview.startswith("x" * 200)
        assert info.preview.endswith("(800 more chars)")


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


class TestLongText:
    def test_free_texts_are_cut_and_keys_kept_whole(self, journal: eventstore.Journal) -> None:
        """Reasons, call names, constraint texts, outcomes, roles and rule messages are cut
        at TEXT characters (summaries at SUMMARY), saying how much was left out; keys, which
        identify obligations, are kept whole."""
        s = long_text_session(journal)
        t = build("long", s.events())
        keys = {o.key for o in t.obligations}
        assert {len(k) for k in keys if k != "done"} == {LONG_KEY}
        texts = [x for x in _strings(attrs.asdict(t)) if x not in keys]
        assert max(map(len, texts)) <= SUMMARY + 40
        cut = [x for x in texts if x.endswith("more chars)")]
        assert len(cut) >= 12  # role, 3 details, outcome, 3 reasons, messages, summaries
        assert all(len(x) <= TEXT + 40 for x in cut if not x.startswith("S"))
        assert t.turn_info[0].role == "R" * NAME + f"\u2026 ({LONG - NAME:,} more chars)"
        assert view_at(t, t.version).obligations.keys() == expected(s.state).obligations.keys()


class TestFirstCovered:
    @pytest.mark.parametrize(
        ("ranges", "pieces"),
        [
            ([(0, 10, 1)], [(0, 10, 1)]),
            ([(0, 10, 1), (0, 20, 2)], [(0, 10, 1), (10, 20, 2)]),
            ([(5, 8, 1), (0, 20, 2)], [(0, 5, 2), (5, 8, 1), (8, 20, 2)]),
            ([(0, 20, 2), (5, 8, 1)], [(0, 5, 2), (5, 8, 1), (8, 20, 2)]),
            ([(0, 5, 1), (0, 5, 2)], [(0, 5, 1)]),
        ],
    )
    def test_each_position_gets_the_first_version_that_covered_it(
        self, ranges: list[tuple[int, int, int]], pieces: list[tuple[int, int, int]]
    ) -> None:
        """Ranges are taken in version order; a later range only adds what was left."""
        assert first_covered(ranges) == pieces
