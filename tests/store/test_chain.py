"""The per-session hash chain on plain rows, no database: linking, walking, continuing."""

from __future__ import annotations

import pickle
from typing import Any

import attrs
import pytest

import eventstore
import reducers as r
from eventstore._store._chain import (
    GENESIS,
    ChainWalk,
    Recorded,
    chain_hash,
    check_links,
    check_row,
    link_rows,
)
from tests.helpers import config

AT = "2026-01-01T00:00:00.000000+00:00"
EVENTS: list[r.Event] = [
    r.SessionStarted(**attrs.asdict(config())),
    r.TurnAppended(index=0, role="user", content="never touch /etc", tokens=5),
    r.ConstraintStated(key="no-etc", text="never touch /etc"),
    r.TurnAppended(index=1, role="assistant", content="ok \u00e9\U0001f600", tokens=3),
]


def _rows(events: list[r.Event] = EVENTS, sid: str = "s") -> list[Recorded]:
    return [Recorded(seq, *row) for seq, row in enumerate(link_rows(sid, 0, GENESIS, events, AT))]


def _walk(rows: list[Recorded]) -> tuple[list[r.Event], ChainWalk]:
    walk = ChainWalk("s", rows)
    return list(walk), walk


class TestLink:
    def test_each_row_hashes_its_predecessor_and_its_content(self) -> None:
        """Row n's prev_hash is row n-1's hash (GENESIS first), and its hash is chain_hash."""
        rows = _rows()
        assert [row.prev_hash for row in rows] == [GENESIS, *(row.hash for row in rows[:-1])]
        for row in rows:
            assert row.hash == chain_hash(
                row.prev_hash, "s", row.version, row.type, 1, row.payload, AT
            )

    def test_the_same_events_link_the_same_way_anywhere(self) -> None:
        """Linking is deterministic; another session id gives another chain."""
        assert _rows() == _rows()
        assert _rows(sid="t")[0].hash != _rows()[0].hash


class TestWalk:
    def test_an_intact_chain_yields_every_event(self) -> None:
        """Every event comes back decoded, and there is no problem."""
        events, walk = _walk(_rows())
        assert (events, walk.problem) == (EVENTS, None)

    @pytest.mark.parametrize(
        ("edit", "problem"),
        [
            ({"payload": '{"key":"no-etc","text":"anything goes"}'}, "hash does not match"),
            ({"payload": '{"text": "never touch /etc", "key": "no-etc"}'}, "not in canonical"),
            ({"prev_hash": GENESIS}, "prev_hash does not match"),
            ({"schema_version": 99}, "schema_version 99"),
            ({"version": "3"}, "not an integer"),
        ],
    )
    def test_it_stops_at_the_first_bad_row_and_says_why(
        self, edit: dict[str, Any], problem: str
    ) -> None:
        """An edited row ends the walk there: the events before it, its version, the cause."""
        rows = _rows()
        rows[2] = rows[2]._replace(**edit)
        events, walk = _walk(rows)
        assert events == EVENTS[:2]
        assert walk.problem is not None
        assert walk.problem.version == 3
        assert problem in walk.problem.problem

    def test_a_missing_row_is_named_not_its_successor(self) -> None:
        """Row 2 deleted: version 2 is the problem, found where 3 stood."""
        rows = _rows()
        del rows[1]
        _, walk = _walk(rows)
        assert walk.problem is not None
        assert (walk.problem.version, walk.problem.problem) == (
            2,
            "version sequence broken: expected 2, found 3",
        )

    def test_the_fast_walk_and_check_row_agree_on_each_row(self) -> None:
        """check_row (the walk's careful path) accepts each intact row with its event."""
        prev = GENESIS
        for version, (row, event) in enumerate(zip(_rows(), EVENTS, strict=True), 1):
            assert check_row(row, prev, version) == (event, "")
            prev = row.hash


class TestContinue:
    def test_rows_that_continue_the_head_reach_their_last_version(self) -> None:
        """Rows recorded elsewhere after head (2, hash) link on: the version they reach."""
        rows = _rows()
        assert check_links("s", (2, rows[1].hash), rows[2:]) == 4

    def test_rows_after_another_head_are_a_conflict(self) -> None:
        """The head moved (or the rows start elsewhere): a ConcurrencyError."""
        rows = _rows()
        with pytest.raises(eventstore.ConcurrencyError, match="at version 1, rows start at 3"):
            check_links("s", (1, rows[0].hash), rows[2:])

    def test_a_row_that_does_not_link_is_an_integrity_error(self) -> None:
        """A tampered row among continuing rows refuses them all."""
        rows = _rows()
        bad = rows[3]._replace(payload=rows[3].payload.replace("ok", "no"))
        with pytest.raises(eventstore.IntegrityError, match="v4: hash does not match"):
            check_links("s", (2, rows[1].hash), [rows[2], bad])

    def test_a_row_of_another_session_is_an_integrity_error(self) -> None:
        """Rows of session t do not continue session s."""
        rows = _rows(sid="t")
        with pytest.raises(eventstore.IntegrityError, match="a row of session 't' among 's'"):
            check_links("s", (0, GENESIS), rows)


# pickle.dumps(..., protocol=4) of a row read by tierlog 0.2 (commit 1308fd6)
RECORDED_PICKLE = (
    b"\x80\x04\x95\xf4\x00\x00\x00\x00\x00\x00\x00\x8c\x18eventstore._store._chain\x94\x8c\x08"
    b"Recorded\x94\x93\x94(K\x07\x8c\x01s\x94K\x02\x8c\x0cCheckpointed\x94K\x01\x8c\x08"
    b'{"at":1}\x94\x8c\x192026-01-01T00:00:00+00:00\x94\x8c@'
    + b"00" * 32
    + b"\x94\x8c@"
    + b"ab" * 32
    + b"\x94t\x94\x81\x94."
)


class TestPickles:
    def test_a_row_pickled_by_0_2_loads(self) -> None:
        """A Recorded row pickled by tierlog 0.2 loads equal, its event decodable."""
        row = pickle.loads(RECORDED_PICKLE)
        stamp = "2026-01-01T00:00:00+00:00"
        assert row == Recorded(
            7, "s", 2, "Checkpointed", 1, '{"at":1}', stamp, "00" * 32, "ab" * 32
        )
        assert row.event == r.Checkpointed(at=1)
