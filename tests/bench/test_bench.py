"""The benchmark scripts' own claims: ``bench/ceiling.py``'s bare loop does the work a
checked commit does (the journal it writes verifies, turn for turn)."""

from __future__ import annotations

from pathlib import Path

import eventstore
from bench import ceiling
from eventstore._ops._audit import verify


def test_the_bare_loop_writes_a_journal_that_verifies(tmp_path: Path) -> None:
    """Its rows link, its payloads are canonical and its state re-derives: the ceiling
    is measured on real work, not a shortcut."""
    rates = ceiling.per_commit(tmp_path, 40, 2)
    assert all(rate > 0 for rate in rates)
    with eventstore.open(tmp_path / "bare.db", readonly=True) as journal:
        assert verify(journal, ["s"]) == []
        assert journal.session("s").state.turns == 80
    with eventstore.open(tmp_path / "live.db", readonly=True) as journal:
        assert journal.session("s").state.turns == 80


def test_the_bulk_parts_are_each_timed(tmp_path: Path) -> None:
    parts = ceiling.bulk(tmp_path, 500, 1)
    assert list(parts) == [
        "plain floor", "schema floor", "validate and fold", "encode and hash", "extend"
    ]  # fmt: skip
    assert all(value > 0 for value in parts.values())
