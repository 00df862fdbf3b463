"""Parent pointers a hostile or damaged transcript may hold: cycles, a boundary that
names itself or an entry after it, a parent that is not a uuid."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import eventstore
from eventstore.claude_code import _transcript as cc
from eventstore.claude_code._ingest import load
from eventstore.cli import main
from reducers import Noted
from tests import transcripts

Raw = dict[str, Any]


def _variant(tmp_path: Path, change: Callable[[list[Raw]], None]) -> Path:
    """The pinned CLI's fixture with ``change`` applied to its entries, as a file."""
    lines = transcripts.NOTES.read_text(encoding="utf-8").splitlines()
    entries = [json.loads(x) for x in lines if x]
    change(entries)
    path = tmp_path / "variant.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def _boundaries(entries: list[Raw]) -> list[Raw]:
    return [e for e in entries if e.get("subtype") == "compact_boundary"]


def _linked(entries: list[Raw]) -> list[Raw]:
    return [e for e in entries if isinstance(e.get("uuid"), str)]


def _line(entries: list[Raw], entry: Raw) -> int:
    return next(n for n, e in enumerate(entries, 1) if e is entry)


def _notes(path: Path, tmp_path: Path) -> tuple[str, list[Noted]]:
    with eventstore.open(tmp_path / "j.db") as journal:
        r = eventstore.ingest(journal, path)
        events = journal.session(r.session_id).events()
        return r.session_id, [e for e in events if isinstance(e, Noted)]


def _self_logical(entries: list[Raw]) -> None:
    first = _boundaries(entries)[0]
    first["logicalParentUuid"] = first["uuid"]


def _forward_logical(entries: list[Raw]) -> None:
    _boundaries(entries)[0]["logicalParentUuid"] = _linked(entries)[-1]["uuid"]


def _self_parent(entries: list[Raw]) -> None:
    first = _boundaries(entries)[0]
    first["parentUuid"] = first["uuid"]


class TestBoundaryPointingNowhereUseful:
    @pytest.mark.parametrize(
        "change",
        [_self_logical, _forward_logical],
        ids=["itself", "a later entry"],
    )
    def test_the_history_before_it_is_read(
        self, tmp_path: Path, change: Callable[[list[Raw]], None]
    ) -> None:
        """A boundary whose logical parent is itself, after it or a cycle joins the entry
        before it in file order, as for a missing one: every turn is read."""
        path = _variant(tmp_path, change)
        assert load(path).plan.turns == load(transcripts.NOTES).plan.turns

    def test_the_guess_is_a_chain_fallback_note_at_the_boundary(self, tmp_path: Path) -> None:
        """The journal records the guess at the boundary's line, saying what was wrong."""
        path = _variant(tmp_path, _self_logical)
        (boundary,) = [e for e in cc.read(path).items if isinstance(e, cc.Boundary)][:1]
        _, notes = _notes(path, tmp_path)
        (note,) = notes
        assert (note.kind, note.line) == ("chain_fallback", boundary.line)
        assert "not an entry before it" in note.text

    def test_no_compaction_is_reviewed_against_one_turn(self, tmp_path: Path) -> None:
        """Both compactions are read near their preTokens (no -99% occupancy)."""
        path = _variant(tmp_path, _self_logical)
        with eventstore.open(tmp_path / "j.db") as journal:
            r = eventstore.ingest(journal, path)
        for review in r.compactions:
            assert review.pre_tokens is not None
            assert abs(review.occupancy - review.pre_tokens) <= 0.05 * review.pre_tokens


def _cycle(entries: list[Raw]) -> None:
    """An assistant entry mid-chain gets the entry that follows it as its parent."""
    children = {e.get("parentUuid"): e for e in entries}
    talk = [e for e in entries if e.get("type") == "assistant" and e["uuid"] in children]
    middle = talk[len(talk) // 2]
    middle["parentUuid"] = children[middle["uuid"]]["uuid"]


def _walked_after(entries: list[Raw], entry: Raw) -> set[str]:
    """The uuids of ``entry`` and the entries after it in the file."""
    return {e["uuid"] for e in entries[entries.index(entry) :] if "uuid" in e}


def _not_a_uuid(entries: list[Raw]) -> None:
    talk = [e for e in entries if e.get("type") == "assistant"]
    talk[-2]["parentUuid"] = 5


class TestParentCycle:
    @pytest.mark.parametrize(
        ("change", "cut"),
        [(_cycle, "assistant"), (_self_parent, "system")],
        ids=["two entries", "a boundary its own parent"],
    )
    def test_a_cycle_is_a_chain_broken_note_naming_it(
        self, tmp_path: Path, change: Callable[[list[Raw]], None], cut: str
    ) -> None:
        """A parentUuid leading back into the walk ends it with a chain_broken note at that
        entry that says so, not only an "abandoned branch"."""
        path = _variant(tmp_path, change)
        entries = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
        looped = [e for e in entries if e.get("parentUuid") in _walked_after(entries, e)]
        _, notes = _notes(path, tmp_path)
        broken = [n for n in notes if n.kind == "chain_broken"]
        assert [n.line for n in broken] == [_line(entries, e) for e in looped]
        assert [e["type"] for e in looped] == [cut]
        assert "(a cycle)" in broken[0].text

    def test_audit_says_the_chain_was_not_read_whole(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``tierlog audit`` exits 1 and its session line says so."""
        path = _variant(tmp_path, _cycle)
        sid, _ = _notes(path, tmp_path)
        assert main(["audit", str(tmp_path / "j.db")]) == 1
        first = capsys.readouterr().out.splitlines()[0]
        assert first.startswith(f"== {sid}: CHAIN NOT READ WHOLE: ")
        assert "cycle" in first

    def test_a_parent_that_is_not_a_uuid_is_a_chain_broken_note(self, tmp_path: Path) -> None:
        """``parentUuid: 5`` ends the chain there, and the note names the value."""
        path = _variant(tmp_path, _not_a_uuid)
        _, notes = _notes(path, tmp_path)
        broken = [n for n in notes if n.kind == "chain_broken"]
        assert len(broken) == 1
        assert "parentUuid 5" in broken[0].text
