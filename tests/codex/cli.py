"""The real Codex CLI, as ``make codex`` installs it, run offline against a mock.

``make codex`` installs the pinned ``@openai/codex`` (the version in ``codex.version``
beside this file; the package ships a native binary) with npm into ``.tools/codex/``
(git ignores it). :class:`Codex` runs ``codex exec`` with a throwaway ``HOME`` and
``CODEX_HOME`` whose ``config.toml`` names one model provider, the
:class:`~tests.codex.mock_api.MockApi` on 127.0.0.1, and turns off the features that
look up other hosts (plugins, apps, update checks: checked with strace, only the
loopback port is contacted). Rollouts land in ``$CODEX_HOME/sessions/YYYY/MM/DD/``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import attrs

from tests.codex.mock_api import MockApi

ROOT = Path(__file__).resolve().parents[2]
VERSION = Path(__file__).with_name("codex.version").read_text().strip()
BINARY = ROOT / ".tools" / "codex" / "node_modules" / ".bin" / "codex"
TIMEOUT = 120.0
COMPACT_LIMIT = 5_000  # model_auto_compact_token_limit: a prompt past it compacts first
OFF = ("plugins", "remote_plugin", "apps", "plugin_sharing", "in_app_updates")
CONFIG = """check_for_update_on_startup = false
model = "gpt-5.1-codex"
model_provider = "mock"
model_auto_compact_token_limit = {limit}

[model_providers.mock]
name = "mock"
base_url = "{base_url}"
wire_api = "responses"
env_key = "TIERLOG_MOCK_KEY"

[analytics]
enabled = false

[features]
{features}
"""


def missing(binary: Path = BINARY) -> str | None:
    """Why the pinned CLI cannot run here (``None`` when it can)."""
    if not binary.exists():
        return f"no Codex CLI at {binary.relative_to(ROOT)} (run `make codex`)"
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} does not run: {exc}"
    if out.stdout.strip() != f"codex-cli {VERSION}":
        return f"{binary} is {out.stdout.strip()!r}, not the pinned {VERSION} (make codex)"
    return None


@attrs.define
class Codex:
    """``codex exec`` in a throwaway home and work folder, talking to ``api``."""

    api: MockApi
    home: Path
    work: Path
    binary: Path = BINARY

    def configure(self) -> None:
        """Write ``config.toml`` for the mock provider."""
        features = "\n".join(f"{name} = false" for name in OFF)
        text = CONFIG.format(limit=COMPACT_LIMIT, base_url=self.api.base_url, features=features)
        (self.home / ".codex").mkdir(parents=True, exist_ok=True)
        (self.home / ".codex" / "config.toml").write_text(text)

    def exec(self, prompt: str, *, resume: bool = False, interrupt_at: int = 0) -> str:
        """One ``codex exec`` (``resume --last`` continues the last session); with
        ``interrupt_at``, SIGINT once the mock holds its request number ``interrupt_at``
        (a :class:`Reply` with ``hang``). Returns what it printed."""
        self.configure()
        argv = [str(self.binary), "exec", "--skip-git-repo-check"]
        argv += ["resume", "--last", prompt] if resume else [prompt]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "CODEX_HOME": str(self.home / ".codex"),
            "TIERLOG_MOCK_KEY": "not-a-key",
        }
        with subprocess.Popen(
            argv, cwd=self.work, env=env, stdin=subprocess.DEVNULL, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        ) as proc:  # fmt: skip
            if interrupt_at:
                self._interrupt(proc, interrupt_at)
            out, _ = proc.communicate(timeout=TIMEOUT)
        return out

    def _interrupt(self, proc: subprocess.Popen[str], request: int) -> None:
        """SIGINT the CLI once the mock has received request number ``request``."""
        deadline = time.monotonic() + TIMEOUT
        while len(self.api.requests) < request and time.monotonic() < deadline:
            if proc.poll() is not None:
                return
            time.sleep(0.05)
        time.sleep(0.2)  # the request is being held: the CLI is waiting on it
        proc.send_signal(signal.SIGINT)

    def rollouts(self) -> list[Path]:
        """The rollout files written so far, oldest first."""
        return sorted((self.home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))
