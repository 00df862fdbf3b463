"""``eventstore.open`` and the Journal: what an open checks at once, and what it makes
only when a session first needs it (the spill folder, the snapshot cache, the logger)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import eventstore
from eventstore._store import SNAPSHOT_EVERY, FolderSpills


class TestOpen:
    def test_the_spill_folder_is_made_on_first_use(self, tmp_path: Path) -> None:
        """A SQLite journal's spill store is the folder beside the file, one object for
        the journal's life, and nothing is created on disk by opening."""
        with eventstore.open(tmp_path / "j.db") as journal:
            spills = journal.spills
            assert isinstance(spills, FolderSpills)
            assert spills.root == tmp_path / "j.db.spills"
            assert journal.spills is spills
        assert not (tmp_path / "j.db.spills").exists()

    def test_a_ready_spill_store_is_kept(self, tmp_path: Path) -> None:
        """``Journal.of`` keeps the spill store it is given, as it is."""
        with eventstore.open(tmp_path / "j.db") as opened:
            store = FolderSpills(tmp_path / "elsewhere")
            journal = eventstore.Journal.of(opened.recorder, store)
            assert journal.spills is store

    @pytest.mark.parametrize("every", [0, 7])
    def test_snapshot_every_reaches_the_cache(self, tmp_path: Path, every: int) -> None:
        """The snapshot cache, made on first use, takes the interval the open was given."""
        with eventstore.open(tmp_path / "j.db", snapshot_every=every) as journal:
            assert journal.snapshots.every == every
            assert journal.snapshots is journal.snapshots
            default = eventstore.Journal.of(journal.recorder, journal.spills).snapshots
            assert default.every == SNAPSHOT_EVERY

    def test_the_logger_is_tierlogs_and_can_be_replaced(self, tmp_path: Path) -> None:
        """Sessions log through the ``tierlog`` logger unless the journal is given another."""
        import logging

        with eventstore.open(tmp_path / "j.db") as journal:
            assert journal.logger is logging.getLogger("tierlog")
            quiet = logging.getLogger("tierlog.quiet")
            journal.logger = quiet
            assert journal.logger is quiet

    def test_a_foreign_database_is_refused_at_open(self, tmp_path: Path) -> None:
        """Deferring the session machinery defers no check: a SQLite file of something
        else is refused by ``open`` itself."""
        db = tmp_path / "other.db"
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE t (x)")
        conn.close()
        with pytest.raises(eventstore.JournalError, match="not a tierlog journal"):
            eventstore.open(db)

    def test_a_bad_snapshot_interval_is_refused_at_open(self, tmp_path: Path) -> None:
        """``snapshot_every`` is checked when the journal is opened, not when the cache
        is first used."""
        with pytest.raises(eventstore.InvalidArgument, match="snapshot_every"):
            eventstore.open(tmp_path / "j.db", snapshot_every=-1)
        with pytest.raises(eventstore.InvalidArgument, match="snapshot_every"):
            eventstore.open(tmp_path / "j.db", snapshot_every=True)
