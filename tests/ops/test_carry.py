"""No laundering: every tamper ``verify`` detects stops export, import and ship, and
what ``--allow-findings`` carries arrives with its findings."""

from __future__ import annotations

from pathlib import Path

import pytest

import eventstore
from eventstore._ops import session_findings
from eventstore.cli import main
from tests.tampers import SID, TAMPERS, Tamper, story
from tests.targets import BACKENDS, Target

pytestmark = pytest.mark.parametrize("backend", BACKENDS, indirect=True)


@pytest.fixture(name="tampered", params=TAMPERS, ids=str)
def _tampered(request: pytest.FixtureRequest, target: Target) -> Tamper:
    """The story session in ``target``, with one tamper applied."""
    with eventstore.open(target.location, snapshot_every=5) as journal:
        story(journal)
    tamper: Tamper = request.param
    tamper.apply(target)
    return tamper


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _events(target: Target) -> int:
    """The session's rows in ``target`` (0 for a journal file never created)."""
    if target.backend == "sqlite" and not Path(target.location).exists():
        return 0
    if target.backend == "postgres" and target.rows("SELECT to_regclass('events')") == [(None,)]:
        return 0
    ((count,),) = target.rows(f"SELECT count(*) FROM events WHERE session_id = '{SID}'")
    return int(count)


class TestVerifySeesEachTamper:
    def test_the_tamper_is_a_finding(self, target: Target, tampered: Tamper) -> None:
        """verify reports the tamper under the check the catalogue names."""
        with eventstore.open(target.location, readonly=True) as journal:
            found = session_findings(journal, SID)
        assert found
        assert any(f.startswith(tampered.check) for f in found), found


class TestExport:
    def test_export_refuses_and_writes_nothing(
        self, capsys: pytest.CaptureFixture[str], target: Target, tampered: Tamper, tmp_path: Path
    ) -> None:
        """export exits 1 naming the finding; no file is left, not even a partial one."""
        (tmp_path / "out").mkdir()
        dump = tmp_path / "out" / "s.jsonl"
        code, out, err = run(capsys, "export", target.location, SID, "-o", str(dump))
        assert (code, out) == (1, "")
        assert f"does not verify: {tampered.check}" in err
        assert "--allow-findings" in err
        assert list(dump.parent.iterdir()) == []

    def test_carried_findings_arrive_as_findings(
        self,
        capsys: pytest.CaptureFixture[str],
        target: Target,
        second_target: Target,
        tampered: Tamper,
        tmp_path: Path,
    ) -> None:
        """An export made with --allow-findings imports only with --allow-findings (or
        not at all: a missing row cannot be carried), and then audit shows the findings."""
        dump = tmp_path / "out.jsonl"
        assert (
            run(capsys, "export", target.location, SID, "-o", str(dump), "--allow-findings")[0] == 0
        )
        code, _, err = run(capsys, "import", second_target.location, str(dump))
        allowed = ("import", second_target.location, str(dump), "--allow-findings")
        if code == 2:  # the rows do not even follow each other: nothing to carry
            assert "expected" in err
            assert run(capsys, *allowed)[0] == 2
            assert _events(second_target) == 0
            return
        assert (code, "does not verify" in err, _events(second_target)) == (1, True, 0)
        code, out, err = run(capsys, *allowed)
        if code == 2:  # invalid in the file's own history (turns out of order): not carried
            assert ("expected" in err, _events(second_target)) == (True, 0)
            return
        assert code == 0
        assert "carried finding (recorded as a note)" in out
        code, out, _ = run(capsys, "audit", second_target.location, SID)
        assert code == 1
        assert "carried_finding" in out
        assert tampered.check in out


class TestShip:
    def test_ship_refuses_and_writes_nothing(
        self,
        capsys: pytest.CaptureFixture[str],
        target: Target,
        second_target: Target,
        tampered: Tamper,
    ) -> None:
        """ship exits 1 naming the finding; the destination gets none of the session."""
        code, out, _ = run(capsys, "ship", target.location, second_target.location)
        assert code == 1
        assert f"{SID}: not shipped: session {SID!r} does not verify: {tampered.check}" in out
        assert _events(second_target) == 0

    def test_what_allow_findings_ships_is_found_again(
        self,
        capsys: pytest.CaptureFixture[str],
        target: Target,
        second_target: Target,
        tampered: Tamper,
    ) -> None:
        """With --allow-findings no tampered row arrives looking clean: rows that do not
        link or whose spill does not read back are not shipped, and a forged decision
        fails the destination's verify as it fails the source's."""
        run(capsys, "ship", target.location, second_target.location, "--allow-findings")
        shipped, stored = _events(second_target), _events(target)
        verified = run(capsys, "verify", second_target.location)[0]
        if tampered.check in ("chain", "spill"):
            assert shipped < stored
        elif tampered.check == "replay":
            assert (shipped, verified) == (stored, 1)
        else:  # the snapshot is the source's cache: the events it stood for are sound
            assert (shipped, verified) == (stored, 0)
