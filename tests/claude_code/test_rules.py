"""The rules that matter: typed (in two languages), carried from CLAUDE.md, read from a
file the user named; not pasted earlier-session text nor the assistant quoted back."""

from __future__ import annotations

from pathlib import Path

import eventstore
from eventstore.claude_code._rules import Rules, instructions
from tests import transcripts
from tests.transcripts import Script


def _constraints(path: Path, tmp_path: Path) -> dict[str, str]:
    with eventstore.open(tmp_path / "r.db") as journal:
        r = eventstore.ingest(journal, path)
        return {k: c.text for k, c in journal.session(r.session_id).state.constraints.items()}


class TestTyped:
    def test_english_and_german_imperatives_are_rules(self) -> None:
        """never/must in English and niemals in German; a plain request is none."""
        found = Rules().typed("Set it up. Never touch /etc. Bitte ändere niemals README.md.")
        assert [r.text for r in found] == ["Never touch /etc.", "Bitte ändere niemals README.md."]

    def test_pasted_earlier_session_text_is_not_the_users(self) -> None:
        """A pasted summary of an earlier session states no rule of this one."""
        pasted = (
            "This session is being continued from a previous conversation.\n"
            "The user said: never use rebase."
        )
        assert Rules().typed(pasted) == []

    def test_assistant_text_quoted_back_is_not_a_rule(self) -> None:
        """A sentence the assistant wrote, pasted back by the user, is not the user's rule."""
        rules = Rules()
        rules.assistant("Plan: we must never drop the users table.")
        assert rules.typed("You said: we must never drop the users table.") == []
        assert rules.typed("We must never drop the users table.") == []
        assert rules.typed("We must never drop the orders table.") != []


class TestCarried:
    def test_claude_md_contents_are_rules(self, tmp_path: Path) -> None:
        """The CLAUDE.md the 2.1 CLI put in the transcript gives its two rules."""
        got = _constraints(transcripts.NOTES, tmp_path)
        assert got["CLAUDE.md: Never push to the main branch."] == "Never push to the main branch."
        assert "CLAUDE.md: Always run `make check` before you say a change is done." in got

    def test_a_nested_claude_md_gives_its_rules(self, tmp_path: Path) -> None:
        """A ``nested_memory`` attachment (a subfolder's CLAUDE.md, loaded when the agent
        read a file there) is a memory file the transcript carries."""
        s = Script()
        s.user("Fix the api.")
        s.entry(
            "attachment",
            attachment={
                "type": "nested_memory",
                "path": "/home/u/proj/api/CLAUDE.md",
                "displayPath": "api/CLAUDE.md",
                "content": {
                    "path": "/home/u/proj/api/CLAUDE.md",
                    "type": "Project",
                    "content": "# API\n- Never change the public routes.\n",
                },
            },
        )
        s.assistant(s.text("On it."))
        got = _constraints(s.write(tmp_path / "s.jsonl"), tmp_path)
        assert got == {
            "CLAUDE.md: Never change the public routes.": "Never change the public routes."
        }

    def test_a_contents_block_gives_its_files_rules(self) -> None:
        """``Contents of <path> (...):`` blocks, as older versions write them."""
        text = "Contents of /p/CLAUDE.md (project instructions):\n\n- Always use uv.\n- Hi.\n"
        assert [(r.key, r.text) for r in instructions(text)] == [
            ("CLAUDE.md: Always use uv.", "Always use uv.")
        ]

    def test_a_file_the_user_named_gives_the_rules_the_agent_read(self, tmp_path: Path) -> None:
        """The user pointed to docs/spec.md; its rule line, as the Read returned it, is one."""
        got = _constraints(transcripts.NOTES, tmp_path)
        assert "spec.md: Passwords must never be written to notes.txt." in got

    def test_a_file_nobody_named_gives_none(self, tmp_path: Path) -> None:
        """Reading a file the user did not point to states no rule."""
        s = Script()
        s.user("Look around.")
        s.assistant(s.tool_use("t1", "Read", file_path="/home/u/proj/NOTES.md"))
        s.result("t1", "1\tNever deploy on Fridays.")
        assert not any(
            "Fridays" in t for t in _constraints(s.write(tmp_path / "s.jsonl"), tmp_path).values()
        )
