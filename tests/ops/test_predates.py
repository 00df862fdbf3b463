"""Journals written before the claim checks and marker-refusal spills (tests/data/
journal-0.2, see its README) still open, replay and verify; each divergence names the
rule it predates. The 0.1 journal, which meets none of those rules, verifies clean."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import eventstore
import reducers as r
from eventstore._ops import NotVerified
from eventstore._ops._audit import verify
from eventstore._ops._predates import CLAIMS, LIVE_OBLIGATIONS, MARKER_SPILLS
from eventstore._ops._transfer import export_lines, import_file

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURE = DATA / "journal-0.2"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())
#: session -> (the first version decided differently now, the rule it predates)
DIVERGES = {
    "false-closure": (9, CLAIMS),
    "restated-constraint": (11, CLAIMS),
    "marker-refusal": (11, MARKER_SPILLS),
}


@pytest.fixture(name="legacy")
def _legacy(tmp_path: Path) -> Path:
    shutil.copy(FIXTURE / "journal-0.2.db", tmp_path / "journal-0.2.db")
    return tmp_path / "journal-0.2.db"


class TestJournal02:
    def test_it_opens_and_replays_to_its_recorded_states(self, legacy: Path) -> None:
        """Every session replays to the version and sha256 it was written with, but the one
        whose node carries an old text: its state now says so."""
        with eventstore.open(legacy) as journal:
            assert journal.sessions() == sorted(EXPECTED)
            for sid, want in EXPECTED.items():
                state = r.fold(journal.session(sid).events())
                assert state.version == want["version"]
                same = state.sha256 == want["sha256"]
                assert same is (sid != "restated-constraint"), sid
            node = journal.session("restated-constraint").state.nodes["n9"]
            assert not node.carries_constraint("no-etc")

    def test_verify_names_the_rule_each_session_predates(self, legacy: Path) -> None:
        """One finding per session written under an older rule, at the documented version."""
        with eventstore.open(legacy) as journal:
            findings = verify(journal)
        assert {f.session_id: f.version for f in findings} == {
            sid: version for sid, (version, _) in DIVERGES.items()
        }
        for f in findings:
            assert f.check == "replay"
            assert f.problem.endswith(DIVERGES[str(f.session_id)][1]), f.problem

    def test_the_messages_say_what_changed(self, legacy: Path) -> None:
        """Each message names the decision, and the wrong hint is never given."""
        with eventstore.open(legacy) as journal:
            problems = {f.session_id: f.problem for f in verify(journal)}
        assert "[Compacted] but replay decides [CompactionRefused]" in problems["false-closure"]
        assert "M1 false_closure: node n9 lists 'grep-1'" in problems["false-closure"]
        assert "which carries another text of it" in problems["restated-constraint"]
        assert "a spill of [1, 2) is due here" in problems["marker-refusal"]
        assert not any(LIVE_OBLIGATIONS in p for p in problems.values())

    def test_import_re_decides_them(self, legacy: Path, tmp_path: Path) -> None:
        """A predating session does not verify, so it travels only with its findings
        allowed; imported, each is re-decided and its findings noted; the honest one is
        neither."""
        with eventstore.open(legacy) as journal:
            for sid in DIVERGES:
                with pytest.raises(NotVerified, match=f"session '{sid}' does not verify"):
                    next(export_lines(journal, sid))
            lines = [
                line for sid in EXPECTED for line in export_lines(journal, sid, allow_findings=True)
            ]
        with eventstore.open(tmp_path / "new.db") as fresh:
            with pytest.raises(NotVerified):
                import_file(fresh, lines)
            done = {i.session_id: i for i in import_file(fresh, lines, allow_findings=True)}
            assert verify(fresh) == []
        assert (done["honest"].redecided, done["honest"].findings) == (0, ())
        assert all(done[sid].redecided > 0 for sid in DIVERGES)
        assert all(done[sid].findings for sid in DIVERGES)  # noted where it now lives
        assert done["false-closure"].skipped  # its marker was on the refused node


class TestJournal01:
    def test_it_still_verifies_clean(self, tmp_path: Path) -> None:
        """The 0.1 journal meets none of the new rules: no finding."""
        for item in (DATA / "journal-0.1").iterdir():
            if item.name.startswith("journal-0.1.db"):
                copy = shutil.copytree if item.is_dir() else shutil.copy
                copy(item, tmp_path / item.name)
        with eventstore.open(tmp_path / "journal-0.1.db") as journal:
            assert verify(journal) == []
