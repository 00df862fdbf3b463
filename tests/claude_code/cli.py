"""The real Claude Code CLI, as ``make claude-code`` installs it, run offline against a mock.

``make claude-code`` installs the pinned ``@anthropic-ai/claude-code`` (the version in
``claude-code.version`` beside this file) with npm into ``.tools/claude-code/`` (git
ignores it). :class:`ClaudeCode` runs that binary with a throwaway ``HOME``, one
project folder and :class:`~tests.claude_code.mock_api.MockApi` as its API: nothing
but 127.0.0.1 is contacted. The transcript it writes is
``$HOME/.claude/projects/<cwd, every non-alphanumeric character as '-'>/<session>.jsonl``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import attrs

from tests.claude_code.mock_api import MockApi

ROOT = Path(__file__).resolve().parents[2]
VERSION = (Path(__file__).with_name("claude-code.version")).read_text().strip()
BINARY = ROOT / ".tools" / "claude-code" / "node_modules" / ".bin" / "claude"
TIMEOUT = 120.0
WINDOW = 200_000  # CLAUDE_CODE_AUTO_COMPACT_WINDOW: auto-compaction fires near it


def missing(binary: Path = BINARY) -> str | None:
    """Why the pinned CLI cannot run here (``None`` when it can)."""
    if not binary.exists():
        return f"no Claude Code CLI at {binary.relative_to(ROOT)} (run `make claude-code`)"
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} does not run: {exc}"
    if not out.stdout.startswith(VERSION + " "):
        return f"{binary} is {out.stdout.strip()!r}, not the pinned {VERSION} (make claude-code)"
    return None


@attrs.frozen(kw_only=True)
class Run:
    """One ``claude -p`` run: its session id and the stream-json lines it printed."""

    session_id: str
    output: tuple[dict[str, object], ...]


@attrs.define
class ClaudeCode:
    """The CLI in a throwaway home and project folder, talking to ``api``."""

    api: MockApi
    home: Path
    project: Path
    binary: Path = BINARY

    @property
    def transcripts(self) -> Path:
        """The folder Claude Code writes this project's transcripts into."""
        return self.home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(self.project))

    def transcript(self, session_id: str) -> Path:
        """The transcript file of ``session_id``."""
        return self.transcripts / f"{session_id}.jsonl"

    def env(self) -> dict[str, str]:
        """The environment of every run: offline, quiet, the mock as the API."""
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "ANTHROPIC_BASE_URL": self.api.url,
            "ANTHROPIC_API_KEY": "mock-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(WINDOW),
        }

    def run(
        self,
        prompt: str,
        *,
        resume: str | None = None,
        tools: Sequence[str] = ("Bash",),
        extra: Sequence[str] = (),
    ) -> Run:
        """``claude -p PROMPT`` (resuming ``resume``), as stream-json; raises on failure."""
        args = [str(self.binary), "-p", prompt, "--output-format", "stream-json", "--verbose"]
        args += ["--allowedTools", ",".join(tools)] if tools else []
        args += ["--resume", resume] if resume else []
        done = subprocess.run(
            [*args, *extra],
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        lines = tuple(json.loads(x) for x in done.stdout.splitlines() if x.startswith("{"))
        ids = [str(x["session_id"]) for x in lines if "session_id" in x]
        if done.returncode != 0 or not ids:
            raise RuntimeError(f"claude exited {done.returncode}: {done.stderr[-2000:]}")
        return Run(session_id=ids[-1], output=lines)
