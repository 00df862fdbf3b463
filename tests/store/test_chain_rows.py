"""``verify``'s walk reads seven columns of a row (``CHAIN_COLUMNS``: no ``seq``, no
session): every column it hashes or links is still read and checked, and the walk
finds what it finds over whole rows, with the same words."""

from __future__ import annotations

from pathlib import Path

import pytest

import eventstore
from eventstore._ops._audit import verify
from eventstore._store import GENESIS, ChainWalk, Recorded, chain_hash, link_rows
from tests.helpers import behind_its_back, fill, new_session, rows
from tests.store.test_chain import AT, EVENTS

SID = "s"
BAD = 5  # the version each edit aims at


def _forged_payload(db: Path) -> None:
    """Row BAD's payload with its keys out of order, its hash computed again (only the
    canonical check can tell)."""
    ((version, kind, schema, payload, at, prev),) = rows(
        db,
        "SELECT version, type, schema_version, payload, recorded_at, prev_hash FROM events"
        f" WHERE session_id = '{SID}' AND version = {BAD}",
    )
    assert payload.startswith('{"content":')
    text = '{"tokens":10,' + payload[1:].replace(',"tokens":10', "")
    assert text != payload
    digest = chain_hash(prev, SID, version, kind, schema, text, at)
    with behind_its_back(db) as conn:
        conn.execute(
            "UPDATE events SET payload = ?, hash = ? WHERE session_id = ? AND version = ?",
            (text, digest, SID, BAD),
        )


EDITS = {
    "prev_hash": ("SET prev_hash = '" + "f" * 64 + "'", "prev_hash does not match"),
    "hash": ("SET hash = '" + "0" * 64 + "'", "hash does not match the event's content"),
    "recorded_at": (
        "SET recorded_at = '2020-01-01T00:00:00.000000+00:00'",
        "hash does not match the event's content",
    ),
    "type": ("SET type = 'CallOpened'", "hash does not match the event's content"),
    "schema_version": ("SET schema_version = 2", "schema_version 2: this tierlog reads"),
    "version": ("SET version = 99", f"version sequence broken: expected {BAD}, found 6"),
    "session": ("SET session_id = 'other'", f"version sequence broken: expected {BAD}, found 6"),
}


def _journal(db: Path) -> None:
    with eventstore.open(db) as journal:
        fill(new_session(journal, SID), 8)


def _walks(db: Path) -> tuple[ChainWalk, ChainWalk, list[object], list[object]]:
    """The walk over ``read_chain``'s rows (what ``verify`` reads) and over whole rows."""
    journal = eventstore.open(db, readonly=True)
    try:
        recorder = journal.recorder
        chain = ChainWalk(SID, recorder.read_chain(SID))  # type: ignore[attr-defined]
        whole = ChainWalk(SID, recorder.read(SID))
        return chain, whole, list(chain), list(whole)
    finally:
        journal.close()


class TestSevenColumns:
    def test_an_intact_session_walks_the_same_either_way(self, tmp_path: Path) -> None:
        """Every event comes back from ``read_chain``'s rows as from whole rows, and a
        row's ``seq`` (not hashed) may change without a finding."""
        db = tmp_path / "j.db"
        _journal(db)
        with behind_its_back(db) as conn:
            conn.execute(f"UPDATE events SET seq = seq + 1000 WHERE version = {BAD}")
        chain, whole, events, expected = _walks(db)
        assert events == expected
        assert len(events) == 1 + 8
        assert chain.problem is None
        assert whole.problem is None

    @pytest.mark.parametrize("column", sorted(EDITS))
    def test_an_edited_column_is_found_as_over_whole_rows(
        self, tmp_path: Path, column: str
    ) -> None:
        """The rows before it come out, then the edited row is named with the words the
        walk over whole rows uses; ``verify`` reports it as a chain finding."""
        db = tmp_path / "j.db"
        _journal(db)
        sql, words = EDITS[column]
        with behind_its_back(db) as conn:
            conn.execute(f"UPDATE events {sql} WHERE session_id = '{SID}' AND version = {BAD}")
        chain, whole, events, expected = _walks(db)
        assert events == expected
        assert len(events) == BAD - 1
        assert chain.problem is not None
        assert chain.problem == whole.problem
        assert chain.problem.version == BAD
        assert chain.problem.problem.startswith(words)
        with eventstore.open(db, readonly=True) as journal:
            (found,) = verify(journal, [SID])
        assert (found.check, found.version, found.problem) == (
            "chain",
            BAD,
            chain.problem.problem,
        )

    def test_a_payload_out_of_canonical_form_is_found_under_a_forged_hash(
        self, tmp_path: Path
    ) -> None:
        """Keys out of order with the row's hash computed again: the hash matches, the
        canonical re-encoding does not."""
        db = tmp_path / "j.db"
        _journal(db)
        _forged_payload(db)
        chain, whole, events, _ = _walks(db)
        assert chain.problem is not None
        assert chain.problem == whole.problem
        assert (chain.problem.version, chain.problem.problem) == (
            BAD,
            "payload is not in canonical form (edited by hand?)",
        )
        assert len(events) == BAD - 1

    def test_whole_rows_of_another_session_are_checked_as_they_are(self) -> None:
        """Whole rows handed to a walk of another session (no backend reads so) are
        checked by ``check_row`` as stored, as before: their own chain links."""
        linked = link_rows("t", 0, GENESIS, EVENTS, AT)
        walk = ChainWalk("s", [Recorded(seq, *row) for seq, row in enumerate(linked)])
        assert list(walk) == EVENTS
        assert walk.problem is None
