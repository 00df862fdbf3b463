"""The hook entry point: its files, what it gives Claude Code, and never failing a session."""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eventstore.claude_code import _hook
from eventstore.claude_code._hook import Folder, main, wait_for
from eventstore.cli import main as cli_main

SESSION = "5cc3b55e-ebb2-408f-a319-4af7fe2e69af"
STDLIB = {
    "__future__",
    "contextlib",
    "json",
    "os",
    "re",
    "sys",
    "time",
    "collections",
    "typing",
    "subprocess",
}


def hook(journal: Path, event: str, **fields: Any) -> tuple[int, str]:
    """Run the hook in-process on one event; its exit code and standard output."""
    data = {"session_id": SESSION, "hook_event_name": event, "cwd": "/tmp", **fields}
    out = io.StringIO()
    code = main(["--journal", str(journal), "--wait", "0.2"], io.StringIO(json.dumps(data)), out)
    return code, out.getvalue()


@pytest.fixture(name="journal")
def _journal(tmp_path: Path) -> Path:
    return tmp_path / "journal.db"


@pytest.fixture(name="folder")
def _folder(journal: Path) -> Folder:
    folder = Folder(str(journal), SESSION)
    folder.make()
    return folder


def _context(out: str) -> str:
    output = json.loads(out)["hookSpecificOutput"]
    return str(output["additionalContext"])


class TestSessionStart:
    def test_after_a_compaction_it_gives_the_prepared_block_once(
        self, journal: Path, folder: Folder
    ) -> None:
        """The block PreCompact's worker wrote is the additionalContext, and is taken."""
        folder.write("compact", "tierlog re-tell: block")
        code, out = hook(journal, "SessionStart", source="compact")
        assert code == 0
        assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        assert _context(out) == "tierlog re-tell: block"
        assert hook(journal, "SessionStart", source="compact") == (0, "")

    @pytest.mark.parametrize("source", ["startup", "resume", "clear"])
    def test_other_sources_give_nothing(self, journal: Path, folder: Folder, source: str) -> None:
        """Only a start after a compaction gives a block."""
        folder.write("compact", "tierlog re-tell: block")
        assert hook(journal, "SessionStart", source=source) == (0, "")
        assert folder.read("compact") == "tierlog re-tell: block"

    def test_a_block_longer_than_claude_codes_limit_is_cut(
        self, journal: Path, folder: Folder
    ) -> None:
        """additionalContext never exceeds 10,000 characters."""
        folder.write("compact", "x" * 12_000)
        assert len(_context(hook(journal, "SessionStart", source="compact")[1])) == 10_000

    def test_the_limit_counts_what_claude_code_counts(self, journal: Path, folder: Folder) -> None:
        """Claude Code counts UTF-16 units (an emoji is two): a block past 10,000 of them
        is put in a file and the model sees a 2 KB preview, so the cut counts them too,
        never splitting a pair."""
        folder.write("compact", "x" * 9_001 + "\U0001f6ab" * 1_000)
        given = _context(hook(journal, "SessionStart", source="compact")[1])
        assert len(given.encode("utf-16-le")) // 2 == 9_999
        assert given == "x" * 9_001 + "\U0001f6ab" * 499

    def test_a_worker_still_busy_past_the_wait_is_one_line_on_stderr(
        self, journal: Path, folder: Folder, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The worker's pid file names a live process: no block, exit 0, one line."""
        folder.write("busy-precompact.1", str(os.getpid()))
        folder.write("compact", "tierlog re-tell: block")
        assert hook(journal, "SessionStart", source="compact") == (0, "")
        err = capsys.readouterr().err
        assert err.startswith("tierlog claude-code hook (SessionStart): HookError: the journal")
        assert len(err.splitlines()) == 1


class TestUserPromptSubmit:
    def test_the_queue_is_delivered_once_and_marked_for_recording(
        self, journal: Path, folder: Folder
    ) -> None:
        """The queued block is the prompt's additionalContext, once; ``told`` (the block
        given) asks the Stop hook to record it."""
        folder.write("queue", "tierlog re-tell: queued")
        code, out = hook(journal, "UserPromptSubmit", prompt="go on")
        assert (code, _context(out)) == (0, "tierlog re-tell: queued")
        assert folder.read("told") == "tierlog re-tell: queued"
        assert hook(journal, "UserPromptSubmit", prompt="again") == (0, "")

    def test_one_delivery_starts_one_recording(
        self, journal: Path, folder: Folder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The Stop hook after a delivery starts one record worker and hands it the block
        given; a later Stop starts none (a worker that fails does not make every turn
        start another)."""
        started: list[str] = []
        monkeypatch.setattr(_hook, "start_worker", lambda event, *_: started.append(event))
        folder.write("told", "tierlog re-tell: given")
        hook(journal, "Stop", transcript_path="/t.jsonl")
        hook(journal, "Stop", transcript_path="/t.jsonl")
        assert started == ["record"]
        assert folder.read("recording") == "tierlog re-tell: given"

    def test_nothing_queued_prints_nothing(self, journal: Path, folder: Folder) -> None:
        """An empty queue: no output at all, so Claude Code adds nothing."""
        assert hook(journal, "UserPromptSubmit", prompt="go on") == (0, "")
        assert folder.read("told") is None


class TestNeverInTheWay:
    @pytest.mark.parametrize(
        "stdin",
        ["", "not json", "[]", '{"hook_event_name": "Stop"}', '{"session_id": "../etc"}'],
    )
    def test_bad_input_is_one_line_and_exit_0(
        self, journal: Path, capsys: pytest.CaptureFixture[str], stdin: str
    ) -> None:
        """Whatever arrives on stdin, the hook exits 0, prints nothing to stdout and one
        line to stderr."""
        out = io.StringIO()
        assert main(["--journal", str(journal)], io.StringIO(stdin), out) == 0
        assert out.getvalue() == ""
        assert len(capsys.readouterr().err.splitlines()) == 1

    def test_a_journal_beside_a_file_is_one_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A journal path whose folder cannot be made (a file is in the way) fails the
        hook's work, not Claude Code's session."""
        (tmp_path / "file").write_text("")
        code, out = hook(tmp_path / "file" / "journal.db", "PreCompact", transcript_path="/x")
        assert (code, out) == (0, "")
        assert "NotADirectoryError" in capsys.readouterr().err

    def test_a_workers_error_is_printed_by_the_next_hook_once(
        self, journal: Path, folder: Folder, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """What the last worker could not do is told on stderr by the next hook, once."""
        folder.write("error", "precompact for session x: InvalidEvent: line 3: not JSON")
        hook(journal, "UserPromptSubmit", prompt="hi")
        assert (
            capsys.readouterr().err
            == "tierlog: precompact for session x: InvalidEvent: line 3: not JSON\n"
        )
        hook(journal, "UserPromptSubmit", prompt="hi")
        assert capsys.readouterr().err == ""

    def test_missing_options_are_one_line(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Without --journal the hook says so and exits 0."""
        assert main([], io.StringIO("{}"), io.StringIO()) == 0
        assert "--journal PATH is required" in capsys.readouterr().err


class TestEncoding:
    def test_input_is_read_as_utf8_whatever_the_locale(self) -> None:
        """Claude Code writes UTF-8: a hook run under a Latin-1 locale reads a path with an
        accent as written, not as mojibake (``python -I`` ignores PYTHONUTF8)."""
        data = json.dumps({"transcript_path": "/home/zoë/t.jsonl"}, ensure_ascii=False)
        stream = io.TextIOWrapper(io.BytesIO(data.encode()), encoding="latin-1")
        assert _hook.read_input(_hook._utf8(stream)) == {"transcript_path": "/home/zoë/t.jsonl"}


class TestWaiting:
    def test_no_pid_file_is_done(self, folder: Folder) -> None:
        """Nothing busy: done at once."""
        assert wait_for(folder, "precompact", 0)

    def test_a_dead_pid_is_done_and_its_death_kept_for_the_journal(self, folder: Folder) -> None:
        """A worker that died without removing its file (killed, out of memory) does not
        hold anyone up; its file becomes a ``died-`` file the next worker notes."""
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        )
        folder.write("busy-precompact.1", child.stdout.strip())
        assert wait_for(folder, "precompact", 0)
        assert folder.read("busy-precompact.1") is None
        assert folder.read("died-precompact.1") == child.stdout.strip()

    def test_a_live_pid_is_waited_for_until_the_deadline(self, folder: Folder) -> None:
        """A running worker: not done within the wait."""
        folder.write("busy-precompact.1", str(os.getpid()))
        assert not wait_for(folder, "precompact", 0.05)

    def test_the_files_other_sessions_left_are_not_listed(
        self, journal: Path, folder: Folder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every session leaves its lock and log in the hook folder; a prompt's hook lists
        only ``running/`` (30,000 such files cost each prompt 14 ms of CPU when it listed
        the whole folder), and still finds a worker running there."""
        for n in range(200):
            Path(folder.root, f"old-{n}.lock").touch()
        folder.write("busy-postcompact.1", str(os.getpid()))
        assert Path(folder.running, f"{SESSION}.busy-postcompact.1").exists()
        listed: list[str] = []
        real = os.listdir

        def listdir(path: str) -> list[str]:
            listed.append(path)
            return real(path)

        monkeypatch.setattr(os, "listdir", listdir)
        monkeypatch.setattr(_hook, "PROMPT_WAIT", 0.05)
        assert hook(journal, "UserPromptSubmit", prompt="hi") == (0, "")
        assert set(listed) == {folder.running}


class TestCommand:
    def test_tierlog_claude_code_hook_is_the_same_entry_point(
        self,
        journal: Path,
        folder: Folder,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """``tierlog claude-code hook --journal J`` reads stdin and answers as the module does."""
        folder.write("queue", "tierlog re-tell: queued")
        data = {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "x"}
        monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(data)))
        assert cli_main(["claude-code", "hook", "--journal", str(journal)]) == 0
        assert _context(capsys.readouterr().out) == "tierlog re-tell: queued"

    def test_bad_input_through_the_command_is_exit_0(
        self, journal: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The command never fails Claude Code either: exit 0, one line on stderr."""
        monkeypatch.setattr(sys, "stdin", io.StringIO("{"))
        assert cli_main(["claude-code", "hook", "--journal", str(journal)]) == 0
        captured = capsys.readouterr()
        assert (captured.out, len(captured.err.splitlines())) == ("", 1)

    @pytest.mark.parametrize(
        "argv", [[], ["--journal"], ["--journal", "j.db", "--bogus"], ["--tell-summarizer"]]
    )
    def test_bad_options_through_the_command_are_exit_0(
        self,
        argv: list[str],
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A hand-written hook command with a missing or unknown option is exit 0 and one
        line, not argparse's exit 2 (which blocks every prompt and every compaction)."""
        monkeypatch.setattr(sys, "stdin", io.StringIO("{}"))
        assert cli_main(["claude-code", "hook", *argv]) == 0
        captured = capsys.readouterr()
        assert (captured.out, len(captured.err.splitlines())) == ("", 1)
        assert captured.err.startswith("tierlog claude-code hook (?): HookError: ")


class TestColdStart:
    def test_the_hook_imports_only_the_standard_library(self) -> None:
        """The module Claude Code runs on every prompt imports nothing of tierlog's."""
        tree = ast.parse(Path(_hook.__file__).read_text())
        imported = {
            str(n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }
        assert imported <= STDLIB

    def test_run_as_claude_code_runs_it_it_answers_without_site_packages(
        self, journal: Path
    ) -> None:
        """``python -I -S _hook.py`` (the installed command) answers a prompt with nothing
        queued: exit 0, no output."""
        data = json.dumps({"session_id": SESSION, "hook_event_name": "UserPromptSubmit"})
        done = subprocess.run(
            [sys.executable, "-I", "-S", _hook.__file__, "--journal", str(journal)],
            input=data,
            capture_output=True,
            text=True,
            check=False,
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
