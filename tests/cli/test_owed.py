"""``tierlog owed``: the re-tell block for a runtime hook, exit 1 when something is owed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import eventstore
from eventstore._retell import HEADER
from eventstore.cli import main
from tests.helpers import config, fill


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(name="db")
def _db(tmp_path: Path) -> str:
    """A journal whose session ``s`` owes a constraint and a call (their turn truncated)."""
    path = tmp_path / "agent.db"
    with eventstore.open(path) as journal:
        s = journal.start_session("s", config())
        s.append_turn("user", "Never modify files under /etc.", 10)
        s.state_constraint("no-etc", "never modify files under /etc")
        s.open_call("grep-1", "tool_call", "grep -rn tenant_id")
        fill(s, 3)
        s.truncate(0, 1, "budget")
        clean = journal.start_session("clean", config())
        fill(clean, 2)
    return str(path)


def versions(db: str) -> dict[str, int]:
    with eventstore.open(db, readonly=True) as journal:
        return {sid: journal.session(sid).state.version for sid in journal.sessions()}


class TestOwed:
    def test_prints_the_block_and_exits_1(
        self, capsys: pytest.CaptureFixture[str], db: str
    ) -> None:
        """Something owed: the block on stdout, exit 1, nothing written."""
        before = versions(db)
        code, out, _ = run(capsys, "owed", db, "s")
        assert code == 1
        assert out.splitlines()[0] == HEADER
        assert [line.split()[2] for line in out.splitlines()[1:]] == ["no-etc", "grep-1"]
        assert versions(db) == before

    def test_nothing_owed_prints_nothing_and_exits_0(
        self, capsys: pytest.CaptureFixture[str], db: str
    ) -> None:
        """Nothing owed: an empty stdout for the hook to inject, exit 0."""
        assert run(capsys, "owed", db, "clean") == (0, "", "")

    def test_json_lists_every_owed_obligation(
        self, capsys: pytest.CaptureFixture[str], db: str
    ) -> None:
        """--json: each obligation with where and why, the block, and what it left out."""
        code, out, _ = run(capsys, "owed", db, "s", "--json", "--max-chars", "250")
        data = json.loads(out)
        assert code == 1
        assert [(o["kind"], o["key"], o["why"]) for o in data["owed"]] == [
            ("constraint", "no-etc", "truncated"),
            ("open_call", "grep-1", "truncated"),
        ]
        assert len(data["block"]) <= 250
        assert data["still_owed"] == [["open_call", "grep-1"]]

    def test_record_appends_the_retell(self, capsys: pytest.CaptureFixture[str], db: str) -> None:
        """--record writes the re-tell turn; asked again, nothing is owed."""
        code, out, _ = run(capsys, "owed", db, "s", "--record")
        assert code == 1
        assert out.startswith(HEADER)
        assert run(capsys, "owed", db, "s") == (0, "", "")
        assert run(capsys, "verify", db)[0] == 0

    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            (("nope",), "no session 'nope'"),
            (("s", "--max-chars", "20"), "cannot hold the first owed obligation"),
            (("s", "--max-chars", "x"), "not a number"),
        ],
    )
    def test_bad_input_exits_2(
        self, capsys: pytest.CaptureFixture[str], db: str, argv: tuple[str, ...], message: str
    ) -> None:
        """An unknown session or a limit that holds nothing: one line, exit 2, no write."""
        before = versions(db)
        code, _, err = run(capsys, "owed", db, *argv)
        assert code == 2
        assert message in err
        assert versions(db) == before
