"""``tierlog claude-code install`` / ``uninstall`` on real settings files, in-process."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eventstore.claude_code import _hook, _install, _settings
from eventstore.claude_code._settings import is_ours
from eventstore.cli import main

THEIRS: dict[str, Any] = {
    "model": "opus",
    "hooks": {
        "PreCompact": [{"hooks": [{"type": "command", "command": "backup.sh", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send 'done ✓'"}]}],
    },
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(name="project")
def _project(tmp_path: Path) -> Path:
    """A project whose .claude/settings.json already holds the user's own hooks."""
    folder = tmp_path / "app"
    (folder / ".claude").mkdir(parents=True)
    (folder / ".claude" / "settings.json").write_text(json.dumps(THEIRS, indent=2) + "\n")
    return folder


def _commands(settings: Path) -> dict[str, list[str]]:
    hooks = json.loads(settings.read_text())["hooks"]
    return {e: [h["command"] for g in gs for h in g["hooks"]] for e, gs in hooks.items()}


class TestInstall:
    def test_install_then_uninstall_leaves_the_file_byte_identical(
        self, capsys: pytest.CaptureFixture[str], project: Path
    ) -> None:
        """The user's hooks (and every other byte) are as they were after the round trip."""
        settings = project / ".claude" / "settings.json"
        before = settings.read_bytes()
        assert run(capsys, "claude-code", "install", "--project", str(project))[0] == 0
        assert settings.read_bytes() != before
        assert run(capsys, "claude-code", "uninstall", "--project", str(project))[0] == 0
        assert settings.read_bytes() == before

    def test_every_event_runs_the_hook_module_on_the_default_journal(
        self, capsys: pytest.CaptureFixture[str], project: Path
    ) -> None:
        """Every event runs the hook as a script, isolated, on .claude/tierlog/journal.db."""
        code, out, _ = run(capsys, "claude-code", "install", "--project", str(project))
        journal = project / ".claude" / "tierlog" / "journal.db"
        assert (code, out.strip()) == (
            0,
            f"{project}/.claude/settings.json: updated, journal {journal}",
        )
        commands = _commands(project / ".claude" / "settings.json")
        ours = {e: [c for c in cs if is_ours(c)] for e, cs in commands.items()}
        assert set(ours) == set(_install.EVENTS)
        assert set(ours) >= {"PreCompact", "SessionStart", "PostCompact", "UserPromptSubmit"}
        words = shlex.split(ours["Stop"][0])
        assert words[:3] == [sys.executable, "-I", "-S"]
        assert words[3].endswith("eventstore/claude_code/_hook.py")
        assert words[4:] == ["--journal", str(journal), "||", "exit", "1"]
        assert commands["Stop"][0] == THEIRS["hooks"]["Stop"][0]["hooks"][0]["command"]

    def test_the_default_journals_folder_is_never_committed(
        self, capsys: pytest.CaptureFixture[str], project: Path
    ) -> None:
        """The journal's folder is made with a .gitignore of everything; the journal
        itself waits for its first use."""
        run(capsys, "claude-code", "install", "--project", str(project))
        folder = project / ".claude" / "tierlog"
        assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
        assert not (folder / "journal.db").exists()

    def test_installing_again_reports_unchanged(
        self, capsys: pytest.CaptureFixture[str], project: Path
    ) -> None:
        """A second install with the same options writes nothing."""
        run(capsys, "claude-code", "install", "--project", str(project))
        settings = project / ".claude" / "settings.json"
        before = settings.stat().st_mtime_ns, settings.read_bytes()
        code, out, _ = run(capsys, "claude-code", "install", "--project", str(project), "--json")
        assert (code, json.loads(out)["action"]) == (0, "unchanged")
        assert (settings.stat().st_mtime_ns, settings.read_bytes()) == before

    def test_another_journal_replaces_the_hooks(
        self, capsys: pytest.CaptureFixture[str], project: Path, tmp_path: Path
    ) -> None:
        """Installing with --journal points every hook at it, once."""
        run(capsys, "claude-code", "install", "--project", str(project))
        other = tmp_path / "elsewhere.db"
        run(capsys, "claude-code", "install", "--project", str(project), "--journal", str(other))
        ours = [c for cs in _commands(project / ".claude" / "settings.json").values() for c in cs]
        ours = [c for c in ours if is_ours(c)]
        assert len(ours) == len(_install.EVENTS)
        assert all(f" --journal {other} " in c for c in ours)

    def test_a_new_settings_file_is_made(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """A project without .claude/ gets one with a settings.json holding the hooks."""
        code, out, _ = run(capsys, "claude-code", "install", "--project", str(tmp_path), "--json")
        assert (code, json.loads(out)["action"]) == (0, "installed")
        assert set(_commands(tmp_path / ".claude" / "settings.json")) == set(_install.EVENTS)

    def test_user_settings_live_in_the_home_folder(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--user merges into ~/.claude/settings.json, journaling to ~/.claude/tierlog/."""
        monkeypatch.setenv("HOME", str(tmp_path))
        _, out, _ = run(capsys, "claude-code", "install", "--user", "--json")
        change = json.loads(out)
        assert change["settings"] == str(tmp_path / ".claude" / "settings.json")
        assert change["journal"] == str(tmp_path / ".claude" / "tierlog" / "journal.db")

    def test_tell_summarizer_is_an_option_of_the_command(
        self, capsys: pytest.CaptureFixture[str], project: Path
    ) -> None:
        """--tell-summarizer is passed on to every hook's command line."""
        run(capsys, "claude-code", "install", "--project", str(project), "--tell-summarizer")
        ours = [c for cs in _commands(project / ".claude" / "settings.json").values() for c in cs]
        assert all(" --tell-summarizer " in c for c in ours if is_ours(c))

    def test_the_files_permissions_are_kept(
        self, capsys: pytest.CaptureFixture[str], project: Path
    ) -> None:
        """A settings file readable by its owner only stays so."""
        settings = project / ".claude" / "settings.json"
        settings.chmod(0o600)
        run(capsys, "claude-code", "install", "--project", str(project))
        assert settings.stat().st_mode & 0o777 == 0o600


class TestTwice:
    def test_hooks_in_another_settings_file_claude_code_reads_are_named(
        self,
        capsys: pytest.CaptureFixture[str],
        project: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Installed for the user and then for a project (or in settings.json and then
        settings.local.json), every session there would run both: install says so on
        standard error, and --json lists the other file."""
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        run(capsys, "claude-code", "install", "--user")
        code, out, err = run(capsys, "claude-code", "install", "--project", str(project), "--json")
        user = tmp_path / "home" / ".claude" / "settings.json"
        assert (code, json.loads(out)["also"]) == (0, [str(user)])
        assert err == (
            f"tierlog claude-code: note: {user} runs tierlog's hooks too: a session reading"
            " both runs them twice (two journals, two blocks); uninstall one\n"
        )
        local = str(project / ".claude" / "settings.local.json")
        _, out, _ = run(capsys, "claude-code", "install", "--settings", local, "--json")
        assert json.loads(out)["also"] == [str(user), str(project / ".claude" / "settings.json")]


class TestLinksAndPaths:
    def test_a_symlinked_settings_file_is_edited_where_it_points(
        self, capsys: pytest.CaptureFixture[str], project: Path, tmp_path: Path
    ) -> None:
        """A settings.json that links into a dotfiles folder stays a link; the file it
        names gets the hooks, and loses them again byte for byte."""
        dotfiles = tmp_path / "dotfiles" / "settings.json"
        dotfiles.parent.mkdir()
        settings = project / ".claude" / "settings.json"
        dotfiles.write_bytes(settings.read_bytes())
        before = dotfiles.read_bytes()
        settings.unlink()
        settings.symlink_to(dotfiles)
        assert run(capsys, "claude-code", "install", "--project", str(project))[0] == 0
        assert settings.is_symlink()
        assert set(_commands(dotfiles)) == set(_install.EVENTS)
        assert run(capsys, "claude-code", "uninstall", "--project", str(project))[0] == 0
        assert settings.is_symlink()
        assert dotfiles.read_bytes() == before

    @pytest.mark.parametrize("kind", ["folder", "fifo"])
    def test_a_journal_path_that_is_no_file_is_refused(
        self, capsys: pytest.CaptureFixture[str], project: Path, tmp_path: Path, kind: str
    ) -> None:
        """--journal naming a folder or a FIFO is exit 2, one line, the settings untouched
        (every hook would fail on it)."""
        journal = tmp_path / "j.db"
        journal.mkdir() if kind == "folder" else os.mkfifo(journal)
        settings = project / ".claude" / "settings.json"
        before = settings.read_bytes()
        argv = ["claude-code", "install", "--project", str(project), "--journal", str(journal)]
        code, _, err = run(capsys, *argv)
        assert code == 2
        assert err.startswith(f"tierlog claude-code: error: --journal {journal}: ")
        assert len(err.splitlines()) == 1
        assert settings.read_bytes() == before


class TestConcurrentEdits:
    @pytest.mark.parametrize("command", ["install", "uninstall"])
    def test_a_file_changed_while_tierlog_edits_it_is_not_overwritten(
        self,
        capsys: pytest.CaptureFixture[str],
        project: Path,
        monkeypatch: pytest.MonkeyPatch,
        command: str,
    ) -> None:
        """Another program (Claude Code saving a permission) writes the file between
        tierlog's read and its write: exit 2, one line, and the other program's text
        stays (it was lost to tierlog's copy of the older text)."""
        settings = project / ".claude" / "settings.json"
        if command == "uninstall":
            run(capsys, "claude-code", "install", "--project", str(project))
        theirs = settings.read_text().replace('"opus"', '"sonnet"')
        edit = getattr(_settings, command)

        def racing(*args: Any) -> str:
            settings.write_text(theirs)
            return str(edit(*args))

        monkeypatch.setattr(_settings, command, racing)
        code, _, err = run(capsys, "claude-code", command, "--project", str(project))
        assert code == 2
        assert "changed while tierlog edited it" in err
        assert len(err.splitlines()) == 1
        assert settings.read_text() == theirs


class TestNeverBlocking:
    def test_a_hook_module_that_is_gone_is_a_non_blocking_error(
        self, capsys: pytest.CaptureFixture[str], project: Path, tmp_path: Path
    ) -> None:
        """The installed command, run by a shell as Claude Code runs it, exits 1 (an error
        Claude Code shows and goes on) when the interpreter cannot open the hook module
        (tierlog uninstalled, its venv moved), never Python's 2, which blocks every prompt
        and every compaction."""
        run(capsys, "claude-code", "install", "--project", str(project))
        command = _commands(project / ".claude" / "settings.json")["UserPromptSubmit"][0]
        module = str(Path(_hook.__file__).resolve())
        assert module in command
        gone = command.replace(module, str(tmp_path / "gone" / "_hook.py"))
        done = subprocess.run(
            ["/bin/sh", "-c", gone], input="{}", capture_output=True, text=True, check=False
        )
        assert done.returncode == 1
        assert "can't open file" in done.stderr


class TestBadInput:
    @pytest.mark.parametrize("text", ["{", "[1]", '{"hooks": []}', "\xff"])
    def test_a_settings_file_claude_code_cannot_read_is_left_alone(
        self, capsys: pytest.CaptureFixture[str], project: Path, text: str
    ) -> None:
        """Exit 2 with one line naming the file; the file is not touched."""
        settings = project / ".claude" / "settings.json"
        settings.write_bytes(text.encode("latin-1"))
        code, _, err = run(capsys, "claude-code", "install", "--project", str(project))
        assert code == 2
        assert err.startswith(f"tierlog claude-code: error: {settings}: ")
        assert len(err.splitlines()) == 1
        assert settings.read_bytes() == text.encode("latin-1")

    def test_two_places_at_once_are_refused(
        self, capsys: pytest.CaptureFixture[str], project: Path
    ) -> None:
        """--user with --project is a usage error, and nothing is written."""
        code, _, err = run(capsys, "claude-code", "install", "--user", "--project", str(project))
        assert code == 2
        assert "give one of --project, --user and --settings" in err

    def test_a_project_folder_that_does_not_exist_is_refused(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """--project naming no folder (a typo) is exit 2 and makes nothing, rather than a
        new folder whose hooks no Claude Code session reads."""
        typo = tmp_path / "ap"
        code, _, err = run(capsys, "claude-code", "install", "--project", str(typo))
        assert code == 2
        assert err == f"tierlog claude-code: error: --project {typo}: no such folder\n"
        assert not typo.exists()

    def test_a_server_journal_is_refused(
        self, capsys: pytest.CaptureFixture[str], project: Path
    ) -> None:
        """The hooks journal to a file; a PostgreSQL URL is refused before anything is written."""
        settings = project / ".claude" / "settings.json"
        before = settings.read_bytes()
        url = "postgresql://db/fleet"
        code, _, err = run(
            capsys, "claude-code", "install", "--project", str(project), "--journal", url
        )
        assert code == 2
        assert "SQLite file" in err
        assert settings.read_bytes() == before

    def test_uninstall_without_a_file_says_so(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """Nothing to take out: exit 0, "absent", and no file is made."""
        code, out, _ = run(capsys, "claude-code", "uninstall", "--project", str(tmp_path))
        assert (code, out.strip().endswith(": absent")) == (0, True)
        assert not (tmp_path / ".claude").exists()
