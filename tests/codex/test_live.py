"""The real Codex CLI (pinned, ``make codex``) against the mock Responses API, end to end."""

from __future__ import annotations

from pathlib import Path

import eventstore
from eventstore.codex import Boundary, build_plan, ingest, read
from tests.codex import make_fixtures
from tests.codex.mock_api import is_compaction


class TestLive:
    def test_the_cli_compacts_and_tierlog_reads_the_rollout(
        self, cli_binary: Path, tmp_path: Path
    ) -> None:
        """Three runs of the scenario: Codex sends one summarisation request, and the
        rollout it writes maps to the counts of the committed fixture."""
        text, requests = make_fixtures.run(cli_binary, tmp_path)
        assert [is_compaction(r) for r in requests].count(True) == 1
        path = tmp_path / "rollout.jsonl"
        path.write_text(text)
        plan = build_plan(read(path)).plan
        assert (plan.turns, plan.calls, plan.failed, plan.interruptions) == (18, 3, 2, 1)
        (bound,) = [s for s in plan.steps if isinstance(s, Boundary)]
        assert make_fixtures.SUMMARY in bound.summary
        with eventstore.open(tmp_path / "agent.db") as journal:
            result = ingest(journal, path)
        (review,) = result.compactions
        assert [o.key for o in review.not_evidenced] == ["exec_command: cat"]
