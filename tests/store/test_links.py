"""A reader's walk over rows it links from a known row, no database: what passes, where
it stops, and what it names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import eventstore
from eventstore._errors import ChainBroken, IntegrityError
from eventstore._store import (
    GENESIS,
    EventWalk,
    Head,
    LinkRow,
    Links,
    Recorded,
    chain_hash,
    from_rows,
    link_rows_of,
)
from tests.helpers import config
from tests.store.test_chain import AT, EVENTS, _rows


def _walked(links: Links) -> list[Any]:
    return list(from_rows(links))


class TestLinks:
    def test_an_intact_chain_passes_every_row_and_follows_the_head(self) -> None:
        """Every event comes out; ``head`` ends at the last row's version and hash."""
        rows = _rows()
        links = Links("s", rows, Head(0, GENESIS))
        assert _walked(links) == EVENTS
        assert links.head == Head(len(rows), rows[-1].hash)

    def test_a_walk_from_the_middle_links_from_the_row_before(self) -> None:
        """Rows 3.. walked from row 2's version and hash pass; from another hash they do not."""
        rows = _rows()
        assert _walked(Links("s", rows[2:], Head(2, rows[1].hash))) == EVENTS[2:]
        with pytest.raises(ChainBroken, match=r"v3 \(prev_hash does not match"):
            _walked(Links("s", rows[2:], Head(2, "f" * 64)))

    @pytest.mark.parametrize(
        ("edit", "problem"),
        [
            ({"payload": '{"key":"no-etc","text":"touch /etc"}'}, "hash does not match"),
            ({"recorded_at": "2020-01-01T00:00:00.000000+00:00"}, "hash does not match"),
            ({"prev_hash": "0" * 64}, "prev_hash does not match"),
            ({"version": 7}, "version sequence broken: expected 3, found 7"),
            ({"hash": "0" * 64}, "hash does not match"),
        ],
    )
    def test_the_first_bad_row_ends_the_walk_after_the_good_ones(
        self, edit: dict[str, Any], problem: str
    ) -> None:
        """The events before the edited row come out, then ChainBroken names its version."""
        rows = _rows()
        rows[2] = rows[2]._replace(**edit)
        seen: list[Any] = []
        with pytest.raises(ChainBroken, match=rf"breaks at v3 \({problem}") as broken:
            seen.extend(from_rows(Links("s", rows, Head(0, GENESIS))))
        assert seen == EVENTS[:2]
        assert (broken.value.version, broken.value.session_id) == (3, "s")

    def test_a_missing_row_is_named_not_its_successor(self) -> None:
        """Row 2 deleted: the walk names version 2."""
        rows = _rows()
        del rows[1]
        with pytest.raises(ChainBroken) as broken:
            _walked(Links("s", rows, Head(0, GENESIS)))
        assert broken.value.version == 2

    def test_a_value_of_another_type_is_worded_not_raised(self) -> None:
        """A version that is text (a file whose schema was edited) is a ChainBroken too."""
        rows = _rows()
        rows[1] = rows[1]._replace(version="2")  # type: ignore[arg-type]
        with pytest.raises(ChainBroken, match="not an integer"):
            _walked(Links("s", rows, Head(0, GENESIS)))


def _slim(rows: list[Recorded]) -> list[LinkRow]:
    return [(r.type, r.schema_version, r.payload, r.recorded_at, r.hash) for r in rows]


START = Head(0, GENESIS)


def _event_walk(rows: list[Recorded], head: Head = START) -> EventWalk:
    """A walk over ``rows`` cut to the columns it reads, the whole rows there to word a break."""
    after = head.version

    def whole(version: int) -> list[Recorded]:
        return [r for r in rows if type(r.version) is not int or r.version >= version]

    return EventWalk("s", _slim(rows), head, lambda v: whole(v) if v > after else rows)


class TestEventWalk:
    def test_an_intact_chain_passes_every_event_and_follows_the_head(self) -> None:
        """The decoded events come out in order; ``head`` ends at the last row."""
        rows = _rows()
        walk = _event_walk(rows)
        assert list(walk) == EVENTS
        assert walk.head == Head(len(rows), rows[-1].hash)

    def test_a_walk_from_the_middle_links_from_the_row_before(self) -> None:
        """Rows 3.. walked from row 2's hash pass; from another hash they do not."""
        rows = _rows()
        assert list(_event_walk(rows[2:], Head(2, rows[1].hash))) == EVENTS[2:]
        with pytest.raises(ChainBroken, match=r"v3 \(prev_hash does not match"):
            list(_event_walk(rows[2:], Head(2, "f" * 64)))

    @pytest.mark.parametrize(
        ("edit", "problem"),
        [
            ({"payload": '{"key":"no-etc","text":"touch /etc"}'}, "hash does not match"),
            ({"recorded_at": "2020-01-01T00:00:00.000000+00:00"}, "hash does not match"),
            ({"prev_hash": "0" * 64}, "prev_hash does not match"),
            ({"version": 7}, "version sequence broken: expected 3, found 7"),
            ({"hash": "0" * 64}, "hash does not match"),
        ],
    )
    def test_the_first_bad_row_ends_the_walk_worded_as_links_words_it(
        self, edit: dict[str, Any], problem: str
    ) -> None:
        """The events before the edited row come out, then the same ChainBroken as
        ``Links`` raises. The prev_hash and version columns are not read: the hash
        covers the walk's own previous hash and position (a row stored under another
        version is found by position: see the next test and ``stop``)."""
        rows = _rows()
        rows[2] = rows[2]._replace(**edit)
        seen: list[Any] = []
        walk = _event_walk(rows)
        if edit.keys() <= {"prev_hash", "version"}:  # columns the walk does not read
            assert list(walk) == EVENTS
            return
        with pytest.raises(ChainBroken, match=rf"breaks at v3 \({problem}") as broken:
            seen.extend(walk)
        assert seen == EVENTS[:2]
        assert walk.head == Head(2, rows[1].hash)
        assert (broken.value.version, broken.value.session_id) == (3, "s")

    def test_a_missing_row_is_named_not_its_successor(self) -> None:
        """Row 2 deleted: the walk names version 2."""
        rows = _rows()
        del rows[1]
        with pytest.raises(ChainBroken) as broken:
            list(_event_walk(rows))
        assert broken.value.version == 2

    def test_rows_that_end_before_stop_are_a_break(self) -> None:
        """The last row stored under a later version (the rows end before ``stop``): the
        walk names the first version it lacks, worded from the whole row."""
        rows = _rows()
        rows[-1] = rows[-1]._replace(version=9)
        walk = EventWalk("s", _slim(rows), Head(0, GENESIS), lambda v: rows[-1:], stop=9)
        with pytest.raises(ChainBroken, match=r"v5 \(version sequence broken: expected 5, found 9"):
            list(walk)

    def test_a_row_that_vanished_before_it_was_worded_is_missing(self) -> None:
        """A break whose whole row cannot be read again is named as missing."""
        rows = _rows()
        rows[1] = rows[1]._replace(hash="0" * 64)
        walk = EventWalk("s", _slim(rows), Head(0, GENESIS), lambda v: [])
        with pytest.raises(ChainBroken, match=r"v2 \(the row is missing"):
            list(walk)

    def test_a_linked_row_that_holds_no_event_is_an_integrity_error(self) -> None:
        """A row whose hash is right but whose payload decodes to no event (written by
        another tool with its hashes recomputed) is an IntegrityError, not a crash."""
        rows = _rows()
        bad = chain_hash(rows[0].hash, "s", 2, "TurnAppended", 1, '{"index":"x"}', AT)
        rows[1] = rows[1]._replace(type="TurnAppended", payload='{"index":"x"}', hash=bad)
        seen: list[Any] = []
        with pytest.raises(IntegrityError, match="malformed stored event") as raised:
            seen.extend(EventWalk("s", _slim(rows[:2]), Head(0, GENESIS), lambda v: rows))
        assert not isinstance(raised.value, ChainBroken)
        assert seen == EVENTS[:1]


class TestReadLinks:
    def test_the_columns_read_are_the_rows(self, tmp_path: Path) -> None:
        """SQLite's read_links gives each row's LinkRow, in version order, like ``read``."""
        with eventstore.open(tmp_path / "j.db") as journal:
            journal.start_session("s", config()).append_turn("user", "hi", 1)
            full = list(journal.recorder.read("s"))
            assert list(link_rows_of(journal.recorder, "s", 1, 2)) == _slim(full)

    def test_a_backend_without_it_is_read_whole(self, tmp_path: Path) -> None:
        """A recorder that has no read_links gives its whole rows, cut to the same columns."""
        with eventstore.open(tmp_path / "j.db") as journal:
            journal.start_session("s", config()).append_turn("user", "hi", 1)
            recorder = journal.recorder

            class Plain:
                read = recorder.read

            assert list(link_rows_of(Plain(), "s", 1, 2)) == _slim(list(recorder.read("s")))
