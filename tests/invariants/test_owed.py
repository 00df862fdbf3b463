"""``invariants.owed``: what the working context lacks, why, in what order. Pure."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

import invariants
import reducers as r

BASE = r.SessionStarted(
    window_tokens=10_000,
    trigger_tokens=8_000,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="halt",
)
NO_ETC = r.ConstraintStated(key="no-etc", text="never modify files under /etc")
GREP = r.CallOpened(call_id="grep-1", kind="tool_call", name="grep -rn tenant_id")
BACKFILL = r.ItemDisposed(key="backfill", disposition="rejected", reason="locks orders")


def turn(i: int, tokens: int = 10) -> r.TurnAppended:
    return r.TurnAppended(index=i, role="user", content=f"turn {i}", tokens=tokens)


def turns(n: int, start: int = 0) -> list[r.Event]:
    return [turn(i) for i in range(start, n)]


def fold(*events: r.Event, config: r.SessionStarted = BASE) -> r.SessionState:
    return more(r.SessionState(), config, *events)


def more(state: r.SessionState, *events: r.Event) -> r.SessionState:
    """``state`` after ``events``, each validated as the session would."""
    return r.fold(events, state, check=invariants.validate)


def node(node_id: str = "n", lo: int = 0, hi: int = 4, **carried: Any) -> r.Compacted:
    return r.Compacted(
        node_id=node_id,
        tier=1,
        input_lo=lo,
        input_hi=hi,
        covers_lo=lo,
        covers_hi=hi,
        tail_start=hi,
        summary="s",
        tokens=3,
        **carried,
    )


def keys(state: r.SessionState) -> list[tuple[str, str]]:
    return [(o.kind, o.key) for o in invariants.owed(state)]


class TestWhatIsOwed:
    def test_nothing_is_owed_while_every_turn_is_resident(self) -> None:
        """Obligations whose turns are resident are held: nothing is owed."""
        assert invariants.owed(fold(turn(0), NO_ETC, GREP, BACKFILL, *turns(3, 1))) == ()

    def test_a_truncated_constraint_is_owed_with_where_and_why(self) -> None:
        """A truncation that evicts a constraint's turn makes it owed, saying all about it."""
        state = fold(turn(0), NO_ETC, *turns(4, 1), r.Truncated(lo=0, hi=2, reason="budget"))
        assert invariants.owed(state) == (
            invariants.Owed(
                kind="constraint",
                key="no-etc",
                text="never modify files under /etc",
                status="pending",
                position=0,
                turn=0,
                version=3,
                why="truncated",
                because="truncated [0, 2) at v7",
            ),
        )

    def test_a_node_that_drops_a_fact_is_named(self) -> None:
        """A fact folded into a node that does not carry it is owed as dropped by that node."""
        (owed,) = invariants.owed(fold(turn(0), BACKFILL, *turns(5, 1), node("n9")))
        assert (owed.kind, owed.status, owed.why, owed.node_id) == (
            "negative_fact",
            "rejected",
            "dropped",
            "n9",
        )
        assert owed.because == "folded into n9, which does not carry it"

    def test_a_withdrawn_turn_was_never_summarised(self) -> None:
        """An open call whose turn the runtime retracted is owed, never summarised."""
        state = fold(turn(0), GREP, turn(1), r.TurnRetracted(index=0, reason="pop_item"))
        (owed,) = invariants.owed(state)
        assert (owed.kind, owed.status, owed.call_kind, owed.why) == (
            "open_call",
            "open",
            "tool_call",
            "never_summarised",
        )

    def test_an_obligation_before_any_turn_has_no_turn(self) -> None:
        """Raised before any turn, an obligation is owed with turn None until a turn holds it."""
        (owed,) = invariants.owed(fold(NO_ETC))
        assert (owed.turn, owed.why, owed.because) == (
            None,
            "never_summarised",
            "no turn holds it yet",
        )
        assert invariants.owed(fold(NO_ETC, turn(0))) == ()

    def test_carried_obligations_are_not_owed(self) -> None:
        """A live node carrying each obligation (a call as UNRESOLVED) owes nothing."""
        carried = node(
            constraints=["no-etc"], unresolved_ids=["grep-1"], dispositions={"backfill": "rejected"}
        )
        assert invariants.owed(fold(turn(0), NO_ETC, GREP, BACKFILL, *turns(5, 1), carried)) == ()


class TestOrder:
    def test_most_needed_first(self) -> None:
        """Constraints, then rejected or failed approaches, then open calls, then superseded."""
        events = [
            turn(0),
            r.ItemDisposed(key="old", disposition="superseded", reason="replaced"),
            GREP,
            turn(1),
            r.ItemDisposed(key="lock", disposition="failed", reason="timeout"),
            BACKFILL,
            turn(2),
            NO_ETC,
            *turns(6, 3),
            r.Truncated(lo=0, hi=3, reason="budget"),
        ]
        assert keys(fold(*events)) == [
            ("constraint", "no-etc"),
            ("negative_fact", "backfill"),
            ("negative_fact", "lock"),
            ("open_call", "grep-1"),
            ("negative_fact", "old"),
        ]

    def test_the_order_does_not_depend_on_the_order_raised(self) -> None:
        """Two states with the same obligations raised in another order owe the same list."""
        cut = r.Truncated(lo=0, hi=1, reason="budget")
        a = fold(turn(0), NO_ETC, GREP, BACKFILL, *turns(3, 1), cut)
        b = fold(turn(0), BACKFILL, GREP, NO_ETC, *turns(3, 1), cut)
        assert keys(a) == keys(b)


class TestRetold:
    def _owed_then_retold(self) -> r.SessionState:
        state = fold(
            turn(0), NO_ETC, BACKFILL, GREP, *turns(4, 1), r.Truncated(lo=0, hi=2, reason="b")
        )
        told = r.Retold(
            index=4,
            constraints={"no-etc": r.constraint_digest(NO_ETC.key, NO_ETC.text)},
            dispositions={"backfill": "rejected"},
            calls=["grep-1"],
        )
        return more(state, turn(4), told)

    def test_a_resident_retell_turn_evidences_what_it_states(self) -> None:
        """After a Retold on a resident turn, nothing it states is owed."""
        assert invariants.owed(self._owed_then_retold()) == ()

    def test_truncating_the_retell_turn_owes_them_again(self) -> None:
        """Once the re-tell turn itself is evicted, its obligations are owed again."""
        state = more(self._owed_then_retold(), r.Truncated(lo=4, hi=5, reason="b"))
        assert [k for _, k in keys(state)] == ["no-etc", "backfill", "grep-1"]

    @pytest.mark.parametrize(
        ("event", "owed"),
        [
            (
                r.ConstraintStated(key="no-etc", text="never modify /etc or /usr"),
                ("constraint", "no-etc"),
            ),
            (
                r.ItemDisposed(key="backfill", disposition="failed", reason="x"),
                ("negative_fact", "backfill"),
            ),
        ],
    )
    def test_a_retell_of_another_text_evidences_nothing(
        self, event: r.Event, owed: tuple[str, str]
    ) -> None:
        """Restated or re-disposed since (onto an evicted turn), the re-tell no longer holds it."""
        state = more(self._owed_then_retold(), turn(5), r.Truncated(lo=5, hi=6, reason="b"), event)
        assert owed in keys(state)

    def test_the_same_text_again_keeps_the_evidence(self) -> None:
        """A constraint restated with the same text is still evidenced by its re-tell."""
        state = more(self._owed_then_retold(), turn(5), r.Truncated(lo=5, hi=6, reason="b"), NO_ETC)
        assert ("constraint", "no-etc") not in keys(state)

    def test_a_lift_forgets_the_retell(self) -> None:
        """A lifted constraint leaves the re-told map; restated, it is owed anew."""
        state = more(self._owed_then_retold(), r.ConstraintLifted(key="no-etc"))
        assert "constraint:no-etc" not in state.retold
        state = more(state, turn(5), r.Truncated(lo=5, hi=6, reason="b"), NO_ETC)
        assert ("constraint", "no-etc") in keys(state)


class TestVersionAndTurn:
    def test_zero_token_turns_name_the_turn_before_the_event(self) -> None:
        """In tokens, of several turns starting at one position, the last before the event."""
        config = attrs.evolve(BASE, truncator_unit="tokens", floor_unit="tokens", floor_span=5)
        state = fold(
            turn(0, 10),
            turn(1, 0),
            NO_ETC,
            turn(2, 0),
            turn(3, 10),
            r.Truncated(lo=0, hi=20, reason="b"),
            config=config,
        )
        (owed,) = invariants.owed(state)
        assert (owed.position, owed.turn, owed.version) == (10, 1, 4)

    def test_the_version_is_not_hashed(self) -> None:
        """Raise versions are bookkeeping: two orders of the same events hash alike."""
        a = fold(turn(0), NO_ETC, GREP)
        b = fold(turn(0), GREP, NO_ETC)
        assert a.constraints["no-etc"].version != b.constraints["no-etc"].version
        assert a.sha256 == b.sha256
