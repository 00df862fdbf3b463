"""``reducers._claims``: what the fold keeps of a node's constraint claims, and the state
JSON of a journal that never restates a carried constraint (hashed as before)."""

from __future__ import annotations

from typing import Any

import attrs

import reducers as r
from reducers._claims import restated, stale_at_commit

BASE = r.SessionStarted(
    window_tokens=1_000,
    trigger_tokens=800,
    truncator_unit="turns",
    floor_span=1,
    floor_unit="turns",
    on_unsafe="halt",
)
ETC = r.ConstraintStated(key="no-etc", text="never /etc")


def node(**changes: Any) -> r.Node:
    base = r.fold(
        [
            BASE,
            r.TurnAppended(index=0, role="u", content="t", tokens=1),
            ETC,
            r.Compacted(
                node_id="n",
                tier=1,
                input_lo=0,
                input_hi=1,
                covers_lo=0,
                covers_hi=1,
                tail_start=1,
                summary="s",
                tokens=1,
                constraints=["no-etc"],
            ),
        ]
    ).nodes["n"]
    return attrs.evolve(base, **changes)


def pending(text: str) -> r.PendingConstraint:
    return r.PendingConstraint(key="no-etc", text=text, position=0)


class TestStaleAtCommit:
    def test_only_keys_not_pending_are_stale(self) -> None:
        """A listed key with no pending constraint carries nothing ("" seen)."""
        assert stale_at_commit(["no-etc", "no-usr"], {"no-etc": pending("x")}) == {"no-usr": ""}


class TestRestated:
    def test_the_same_text_changes_no_node(self) -> None:
        """Restated as it was, no claim changes."""
        assert restated([node()], "no-etc", pending("never /etc"), "never /etc") == []

    def test_another_text_keeps_the_digest_the_node_saw(self) -> None:
        """Restated otherwise, the node keeps the digest of the text it carried."""
        (after,) = restated([node()], "no-etc", pending("never /etc"), "never /usr")
        assert after.stale_constraints == {"no-etc": r.constraint_digest("no-etc", "never /etc")}
        assert not after.carries_constraint("no-etc")

    def test_back_to_the_text_it_saw_clears_it(self) -> None:
        """Restated back to the text it saw, the node carries it again."""
        stale = node(stale_constraints={"no-etc": r.constraint_digest("no-etc", "never /etc")})
        (after,) = restated([stale], "no-etc", pending("never /usr"), "never /etc")
        assert after.stale_constraints == {}

    def test_after_a_lift_no_older_node_carries_it(self) -> None:
        """Stated while not pending (after a lift), every listing node saw no live text."""
        (after,) = restated([node()], "no-etc", None, "never /etc")
        assert after.stale_constraints == {"no-etc": ""}

    def test_dead_and_unrelated_nodes_are_left_alone(self) -> None:
        """Only live nodes listing the key can change."""
        assert restated([node(live=False), node(constraints=())], "no-etc", None, "x") == []


class TestHashes:
    def test_a_node_with_true_claims_hashes_without_the_new_key(self) -> None:
        """``stale_constraints`` shows in the state JSON only when it holds something."""
        state = r.fold([BASE, r.TurnAppended(index=0, role="u", content="t", tokens=1), ETC])
        assert "version" not in state.to_json()["constraints"]["no-etc"]
        assert "retold" not in state.to_json()

    def test_a_retold_state_shows_what_was_retold(self) -> None:
        """A Retold adds the ``retold`` key, with the turn and what it stated."""
        events: list[r.Event] = [
            BASE,
            r.TurnAppended(index=0, role="u", content="t", tokens=1),
            ETC,
            r.TurnAppended(index=1, role="system", content="- no-etc", tokens=1),
            r.Retold(index=1, constraints={"no-etc": r.constraint_digest("no-etc", "never /etc")}),
        ]
        told = r.fold(events).to_json()["retold"]
        assert told == {
            "constraint:no-etc": {
                "kind": "constraint",
                "key": "no-etc",
                "turn": 1,
                "stated": r.constraint_digest("no-etc", "never /etc"),
                "version": 5,
            }
        }
