"""Fixtures for the Codex tests: the pinned CLI, the mock Responses API, the fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import transcripts
from tests.codex import cli
from tests.codex.mock_api import MockApi
from tests.helpers import real_part_missing

DATA = Path(__file__).resolve().parents[1] / "data" / "codex"
FIXTURE = DATA / f"cli-{cli.VERSION}-compaction.jsonl"
REAL = transcripts.REAL_CODEX_DIR / "battle-cities.rollout.jsonl"


@pytest.fixture(name="cli_binary", scope="session")
def _cli_binary() -> Path:
    """The pinned CLI; skips (fails in CI: TIERLOG_REQUIRE_CODEX) when it cannot run."""
    reason = cli.missing()
    if reason is not None:
        real_part_missing(reason, "TIERLOG_REQUIRE_CODEX")
    return cli.BINARY


@pytest.fixture(name="api")
def _api() -> Iterator[MockApi]:
    """A mock Responses API on 127.0.0.1, empty script; stopped after the test."""
    with MockApi() as api:
        yield api


@pytest.fixture(name="real")
def _real() -> Path:
    """The public rollout in ``../shared/data/codex/`` (skips without it)."""
    if not REAL.exists():
        pytest.skip(f"no {REAL.name} beside the clone (../shared/data/codex/)")
    return REAL
