"""Journals written by earlier releases open, replay to the state they recorded, and verify."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import eventstore
from eventstore._ops import verify

DATA = Path(__file__).resolve().parents[1] / "data"
Old = tuple[Path, dict[str, dict[str, object]]]  # a copy of the journal, and what it recorded


@pytest.fixture(name="old", params=["0.2"])
def _old(request: pytest.FixtureRequest, tmp_path: Path) -> Old:
    """A copy of the journal a release wrote, and what that release computed of it."""
    folder = DATA / f"journal-{request.param}"
    for item in folder.iterdir():
        if item.name.startswith(f"journal-{request.param}.db"):
            copy = shutil.copytree if item.is_dir() else shutil.copyfile
            copy(item, tmp_path / item.name)
    expected = json.loads((folder / "expected.json").read_text())
    return tmp_path / f"journal-{request.param}.db", expected


class TestOldJournals:
    def test_every_session_replays_to_the_state_it_recorded(self, old: Old) -> None:
        """Each session's head version and state sha256 are the ones its release computed."""
        path, expected = old
        with eventstore.open(path, readonly=True) as journal:
            assert journal.sessions() == sorted(expected)
            for sid, recorded in expected.items():
                state = journal.replay_session(sid).state
                assert (state.version, state.sha256) == (recorded["version"], recorded["sha256"])

    def test_it_verifies_clean_and_its_spills_read_back(self, old: Old) -> None:
        """verify re-derives every recorded decision, and every spill matches its sha256."""
        path, _ = old
        with eventstore.open(path) as journal:
            assert verify(journal) == []
            for sid in journal.sessions():
                for spill in journal.session(sid).state.spills:
                    assert journal.read_spill(sid, spill.handle)
