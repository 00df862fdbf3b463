"""``tierlog log``'s rows: all of them shown, the first break kept for the command."""

from __future__ import annotations

from pathlib import Path

import eventstore
from eventstore.cli._walk import checked_rows
from tests.helpers import fill, new_session
from tests.tampers import behind
from tests.targets import SqliteTarget


def _journal(path: Path) -> SqliteTarget:
    with eventstore.open(path) as journal:
        fill(new_session(journal), 5)
    return SqliteTarget(path)


class TestCheckedRows:
    def test_an_intact_session_has_no_break(self, db_path: Path) -> None:
        """Every row comes; ``broken`` stays None."""
        _journal(db_path)
        with eventstore.open(db_path, readonly=True) as journal:
            rows = checked_rows(journal, "s", 1, None)
            assert [r.version for r in rows] == [1, 2, 3, 4, 5, 6]
            assert rows.broken is None

    def test_every_row_is_shown_and_the_first_break_kept(self, db_path: Path) -> None:
        """Rows 3 and 5 edited: all six rows come, the break named is v3."""
        target = _journal(db_path)
        edit = "UPDATE events SET recorded_at = ? WHERE version = ?"
        behind(target, [(edit, ("x", 3)), (edit, ("y", 5))])
        with eventstore.open(db_path, readonly=True) as journal:
            rows = checked_rows(journal, "s", 1, None)
            assert len(list(rows)) == 6
            assert rows.broken is not None
            assert rows.broken.version == 3

    def test_a_walk_from_the_middle_links_from_the_row_before(self, db_path: Path) -> None:
        """--from 4 checks row 4 against row 3's hash: an edit of row 4 is found, one of
        row 2 is not walked over."""
        target = _journal(db_path)
        edit = "UPDATE events SET recorded_at = ? WHERE version = ?"
        behind(target, [(edit, ("x", 2))])
        with eventstore.open(db_path, readonly=True) as journal:
            rows = checked_rows(journal, "s", 4, None)
            assert [r.version for r in rows] == [4, 5, 6]
            assert rows.broken is None
        behind(target, [(edit, ("x", 4))])
        with eventstore.open(db_path, readonly=True) as journal:
            rows = checked_rows(journal, "s", 4, None)
            list(rows)
            assert rows.broken is not None
            assert rows.broken.version == 4
