"""Fixtures for running the real Claude Code CLI against the mock Messages API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.claude_code import cli
from tests.claude_code.mock_api import MockApi
from tests.helpers import real_part_missing


@pytest.fixture(name="cli_binary", scope="session")
def _cli_binary() -> Path:
    """The pinned CLI; skips (fails in CI: TIERLOG_REQUIRE_CLAUDE_CODE) when it cannot run."""
    reason = cli.missing()
    if reason is not None:
        real_part_missing(reason, "TIERLOG_REQUIRE_CLAUDE_CODE")
    return cli.BINARY


@pytest.fixture(name="api")
def _api() -> Iterator[MockApi]:
    """A mock Messages API on 127.0.0.1, empty script; stopped after the test."""
    with MockApi() as api:
        yield api


@pytest.fixture(name="claude")
def _claude(cli_binary: Path, api: MockApi, tmp_path: Path) -> cli.ClaudeCode:
    """The CLI in a throwaway home and project folder, talking to ``api``."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return cli.ClaudeCode(api=api, home=home, project=project, binary=cli_binary)
