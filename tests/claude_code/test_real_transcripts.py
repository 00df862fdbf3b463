"""Real Claude Code sessions through the journal: journaling, checks, replay, transfer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import eventstore
import reducers
from eventstore.cli import main
from tests import transcripts
from tests.helpers import config

REAL = config(window_tokens=200_000, trigger_tokens=160_000, floor_span=4, on_unsafe="spill")


def _compact_everything(s: eventstore.Session, entry: dict[str, Any]) -> None:
    """Fold every turn so far into one L1 node with the real summary, as Claude Code did."""
    end = s.state.end
    summary = transcripts.compact_summary(transcripts.LONG_SESSION)
    node = s.compact(
        tier=1,
        input=(0, end),
        covers=(0, end),
        tail_start=end,
        summary=summary,
        tokens=len(summary) // 4,
    )
    s.emit_marker(node.node_id)


class TestLongSession:
    @pytest.fixture(name="s")
    def _s(self, journal: eventstore.Journal) -> eventstore.Session:
        s = journal.start_session("real", REAL)
        transcripts.replay(s, transcripts.LONG_SESSION, on_boundary=_compact_everything)
        return s

    def test_auto_compaction_is_journaled_and_trusted(self, s: eventstore.Session) -> None:
        """The real compaction passes C1-C5; its marker holds; resume returns the digest."""
        state = s.state
        (node,) = state.nodes.values()
        (marker,) = state.markers.values()
        assert (node.covers_lo, node.covers_hi, marker.valid) == (0, 326, True)
        assert state.turns == 491
        ctx = s.resume(marker.marker_id)
        first, *tail = (json.loads(line) for line in ctx.content.splitlines())
        assert ctx.source == "digest"
        assert (first["kind"], first["summary"]) == ("summary", node.summary)
        assert [t["index"] for t in tail] == list(range(326, 491))

    def test_replays_and_verifies(
        self, s: eventstore.Session, db_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A cold replay gives the live hash, and verify re-derives every decision."""
        assert reducers.fold(s.events()).sha256 == s.state.sha256
        assert main(["verify", str(db_path)]) == 0
        capsys.readouterr()

    def test_export_import_round_trip(
        self, s: eventstore.Session, db_path: Path, tmp_path: Path
    ) -> None:
        """Real content (unicode, code, JSON in strings) survives export and import."""
        dump, fresh = tmp_path / "real.jsonl", tmp_path / "copy" / db_path.name
        fresh.parent.mkdir()
        assert main(["export", str(db_path), "real", "-o", str(dump)]) == 0
        assert main(["import", str(fresh), str(dump)]) == 0
        with eventstore.open(fresh) as copy:
            assert copy.session("real").state.sha256 == s.state.sha256


class TestToolHeavy:
    def test_tool_calls_pair_up(self, journal: eventstore.Journal) -> None:
        """Every tool_use is opened and every tool_result resolves it."""
        s = journal.start_session("tools", REAL)
        transcripts.replay(s, transcripts.TOOL_HEAVY)
        assert (len(s.state.call_ids), dict(s.state.open_calls)) == (6, {})

    def test_truncating_an_open_call_refuses_the_compaction(
        self, journal: eventstore.Journal
    ) -> None:
        """Truncate and spill the turn that opened a real tool call, compact without it: C5."""
        s = journal.start_session("tools", REAL)
        refused: list[eventstore.UnrecoverableCompactionError] = []

        def evict(session: eventstore.Session, call_id: str) -> None:
            if refused:
                return
            end = session.state.end
            session.truncate(0, end, "budget")
            session.spill(0, end)  # keeps the bytes (C3), but the summarizer never saw them
            with pytest.raises(eventstore.UnrecoverableCompactionError) as err:
                session.compact(
                    tier=1,
                    input=(0, end),
                    covers=(0, end),
                    tail_start=end,
                    summary="did some tool calls",
                    tokens=10,
                )
            refused.append(err.value)

        transcripts.replay(s, transcripts.TOOL_HEAVY, on_call=evict)
        (error,) = refused
        assert [v.rule for v in error.violations] == ["C5"]
        assert "open tool_call" in error.violations[0].message
        assert s.state.nodes == {}
