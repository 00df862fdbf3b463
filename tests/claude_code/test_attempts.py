"""One finding per attempt, the error line quoted, and a later success resolving it."""

from __future__ import annotations

from pathlib import Path

import pytest

import eventstore
from eventstore.claude_code._attempts import error_line
from eventstore.cli import main
from tests.transcripts import Script


def _three_tries() -> Script:
    s = Script()
    s.user("Commit it.")
    for n, (text, error) in enumerate(
        [("Exit code 128\nfatal: not a git repository", True)] * 2 + [("", False)], 1
    ):
        s.assistant(s.tool_use(f"t{n}", "Bash", command="git add -A"), prompt=1_000 + n)
        s.result(f"t{n}", text, error=error)
    s.assistant(s.tool_use("t9", "Bash", command="git push"), prompt=1_100)
    s.result("t9", "Exit code 1\nfatal: no upstream", error=True)
    s.boundary(1_150, "Committed the files.")
    s.user("thanks")
    return s


class TestAttempts:
    def test_each_failed_attempt_is_its_own_fact_quoting_its_error(self, tmp_path: Path) -> None:
        """Two failed ``git add -A`` are two facts, each quoting its own error line."""
        with eventstore.open(tmp_path / "a.db") as journal:
            r = eventstore.ingest(journal, _three_tries().write(tmp_path / "a.jsonl"))
            facts = journal.session(r.session_id).state.dispositions
        adds = sorted(k for k in facts if k.startswith("Bash: git add -A"))
        assert adds == ["Bash: git add -A (line 3)", "Bash: git add -A (line 5)"]
        assert facts[adds[0]].disposition == "superseded"  # the third try worked
        assert facts["Bash: git push (line 9)"].reason == "line 9: fatal: no upstream"

    def test_audit_says_resolved_later_instead_of_flagging(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """One audit line per attempt; the resolved ones say so and are not NOT evidenced."""
        db = tmp_path / "a.db"
        assert main(["ingest", str(db), str(_three_tries().write(tmp_path / "a.jsonl"))]) == 0
        assert main(["audit", str(db)]) == 1
        lines = capsys.readouterr().out.splitlines()
        resolved = [x for x in lines if x.strip().startswith("resolved later")]
        flagged = [x for x in lines if x.strip().startswith("NOT evidenced")]
        assert len(resolved) == 2
        assert len(flagged) == 1
        assert "'Bash: git push (line 9)'" in flagged[0]


class TestErrorLine:
    @pytest.mark.parametrize(
        ("output", "line"),
        [
            ("Exit code 1\ncat: x: No such file or directory", "cat: x: No such file or directory"),
            (
                "<tool_use_error>File has not been read yet.</tool_use_error>",
                "File has not been read yet.",
            ),
            ("", "(no output)"),
        ],
    )
    def test_the_line_that_says_what_went_wrong(self, output: str, line: str) -> None:
        """The exit-code line and the error tags are not what went wrong."""
        assert error_line(output) == line

    HOOK = (
        "Pre-commit validation failed:\\n\\n[LINT]\\nChecking 88 source files ...\n\n"
        "  Refactoring opportunities          \n\u2503 \n"
        "\u2503 [F] \u2192 Function is too complex (cyclomatic complexity is 13, max is 9).\n"
        "\u2503       lib/app/hooks.py:144:7\n"
        + "[:a, :b, :c, :d]\n" * 200
        + "\\n\\nFix these first."
    )

    def test_an_escaped_hook_output_is_quoted_by_its_first_lines_that_say_so(self) -> None:
        """A literal backslash-n is a line break; the quote is short and on one line."""
        assert error_line(self.HOOK) == (
            "Pre-commit validation failed: | [LINT] | [F] \u2192 Function is too complex"
            " (cyclomatic complexity is 13, max is 9)."
        )

    @pytest.mark.parametrize(
        ("output", "line"),
        [
            ("Exit code 1", "Exit code 1"),
            ("(eval):1: permission denied: ./run.sh", "(eval):1: permission denied: ./run.sh"),
            ("Checking 3 files ...\nAll good otherwise", "All good otherwise"),
            ("x" * 500, "x" * 297 + "..."),
        ],
    )
    def test_without_such_a_line_the_first_that_reads(self, output: str, line: str) -> None:
        """No line says what went wrong: the first meaningful one, bounded."""
        assert error_line(output) == line

    def test_the_audit_quotes_it_without_escapes(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The audit's line for the failed commit holds no literal "\\n" and stays short."""
        s = Script()
        s.user("Commit it.")
        s.assistant(s.tool_use("t1", "Bash", command='git commit -m "wip"'), prompt=1_000)
        s.result("t1", self.HOOK, error=True)
        s.boundary(1_050, "Worked on the hooks.")
        s.user("go on")
        db = tmp_path / "a.db"
        assert main(["ingest", str(db), str(s.write(tmp_path / "a.jsonl"))]) == 0
        assert main(["audit", str(db)]) == 1
        (line,) = [x for x in capsys.readouterr().out.splitlines() if "NOT evidenced" in x]
        assert "\\n" not in line
        assert line.endswith(
            "line 3: Pre-commit validation failed: | [LINT] | [F] \u2192 Function"
            " is too complex (cyclomatic complexity is 13, max is 9)."
        )
