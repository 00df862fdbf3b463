"""A reader's walk over rows it links from a known row, no database: what passes, where
it stops, and what it names."""

from __future__ import annotations

from typing import Any

import pytest

from eventstore._errors import ChainBroken
from eventstore._store import GENESIS, Head, Links, from_rows
from tests.store.test_chain import EVENTS, _rows


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
