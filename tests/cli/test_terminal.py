"""What reaches a terminal: control characters and bidi marks escaped, secrets hidden,
JSON exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import eventstore
from eventstore.cli import main
from eventstore.cli._terminal import json_safe, printable
from tests.helpers import new_session

HOSTILE = "title\x1b]0;pwned\x07 \u202eevil\u202c bell\x07 csi\x9b2J cr\r"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _raw(text: str) -> list[str]:
    """The characters a terminal would act on, found in ``text``."""
    return [c for c in text if c in "\x1b\x07\x9b\r\u202e\u202c"]


@pytest.fixture(name="db")
def _db(tmp_path: Path) -> str:
    """A journal whose agent text holds escape sequences and a bidi override."""
    with eventstore.open(tmp_path / "agent.db") as journal:
        s = new_session(journal)
        s.append_turn("user", HOSTILE, 3)
        s.state_constraint(f"key{HOSTILE}", HOSTILE)
        s.append_turn("user", "postgresql://admin:hunter2@db/prod", 3)
        s.truncate(0, 2, "budget")  # the constraint is owed: tierlog owed re-tells it
    return str(tmp_path / "agent.db")


class TestEscaping:
    def test_printable_escapes_what_a_terminal_acts_on(self) -> None:
        """ESC, BEL, C1 CSI, CR and the bidi override come out as escapes; text stays."""
        shown = printable(HOSTILE)
        assert _raw(shown) == []
        assert "\\x1b]0;pwned\\x07" in shown
        assert "\\u202eevil\\u202c" in shown
        assert printable("a\nb\tc") == "a\nb\tc"  # lines keep their newlines and tabs
        assert printable("a\nb\tc", cell=True) == "a\\x0ab\\x09c"

    def test_json_safe_keeps_the_values(self) -> None:
        """JSON made safe decodes to exactly the same value."""
        text = json.dumps({"k": HOSTILE}, ensure_ascii=False)
        safe = json_safe(text)
        assert _raw(safe) == []
        assert json.loads(safe) == {"k": HOSTILE}

    @pytest.mark.parametrize(
        "argv",
        [
            ["log", "DB", "s"],
            ["state", "DB", "s"],
            ["diff", "DB", "s", "1", "3"],
            ["sql", "DB", "SELECT content, content AS 'x\x1b[2J' FROM turns"],
            ["sessions", "DB"],
            ["audit", "DB"],
            ["owed", "DB", "s"],
        ],
        ids=["log", "state", "diff", "sql", "sessions", "audit", "owed"],
    )
    def test_text_output_has_no_raw_control_character(
        self, capsys: pytest.CaptureFixture[str], db: str, argv: list[str]
    ) -> None:
        """Every text command prints agent text escaped, and no URL password."""
        code, out, err = run(capsys, *[db if a == "DB" else a for a in argv])
        assert code in (0, 1)
        assert _raw(out + err) == []
        assert "hunter2" not in out

    def test_a_long_cell_is_cut_after_its_password_is_hidden(
        self, capsys: pytest.CaptureFixture[str], db: str
    ) -> None:
        """A table cell is made from the start of a long value (a wide row is never held
        whole), but a URL password that runs past that start is still hidden."""
        query = "SELECT 'postgresql://u:' || printf('%.100000c', 'p') || '@h/db' AS url"
        code, out, _ = run(capsys, "sql", db, query)
        assert code == 0
        assert out.splitlines()[2] == "postgresql://u:***@h/db"
        assert "pp" not in out

    def test_json_output_is_exact_and_safe(
        self, capsys: pytest.CaptureFixture[str], db: str
    ) -> None:
        """sql --json and export decode to the agent's text exactly, nothing raw in them."""
        code, out, _ = run(capsys, "sql", db, "SELECT content FROM turns", "--json")
        assert (code, _raw(out), json.loads(out)[0]["content"]) == (0, [], HOSTILE)
        code, out, _ = run(capsys, "export", db, "s")
        assert (code, _raw(out)) == (0, [])
        assert json.loads(out.splitlines()[1])["payload"]["content"] == HOSTILE

    def test_an_error_message_is_escaped_and_redacted(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """A hostile file name and a URL in an error are shown safe."""
        name = str(tmp_path / "x\x1b]0;t\x07.db")
        code, _, err = run(capsys, "import", name, "mysql://u:hunter2@h/x")
        assert code == 2
        assert _raw(err) == []
        assert "hunter2" not in err


class TestLogging:
    def test_log_lines_are_escaped_and_redacted(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """A warning that quotes agent text (a refusal naming a constraint) is safe."""
        key = f"k{HOSTILE}postgresql://u:hunter2@h/x"
        with eventstore.open(tmp_path / "a.db") as journal:
            s = new_session(journal, on_unsafe="spill")
            s.append_turn("user", "t", 3)
            s.state_constraint(key, "never")
            s.append_turn("user", "t", 3)
            s.truncate(0, 1, "budget")
            with pytest.raises(eventstore.UnrecoverableCompactionError):
                s.compact(tier=1, input=(0, 2), covers=(0, 2), tail_start=2, summary="x", tokens=1)
        dump = tmp_path / "a.jsonl"
        assert run(capsys, "export", str(tmp_path / "a.db"), "s", "-o", str(dump))[0] == 0
        code, _, err = run(capsys, "import", str(tmp_path / "b.db"), str(dump))
        assert code == 0
        assert "refused" in err
        assert "C5" in err
        assert _raw(err) == []
        assert "hunter2" not in err
