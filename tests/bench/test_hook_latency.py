"""bench/hook_latency.py at smoke sizes: it times real hook runs on the journals it says."""

from __future__ import annotations

import logging
from pathlib import Path

import eventstore
from bench import hook_latency
from bench.transcript import SESSION
from eventstore._ops._audit import verify


class TestHookLatency:
    def test_every_event_is_timed_on_both_journals(self, tmp_path: Path) -> None:
        """Each hook event has its p50/p95/max on the small and the bigger journal, with
        the target; the journals verify, the bigger one holds the other sessions, and
        the small one holds the transcript's new part after PreCompact's worker ran."""
        logging.getLogger("tierlog").setLevel(logging.ERROR)
        small, big = hook_latency.prepare(tmp_path, mb=0.3, new_mb=0.05, others=2)
        with eventstore.open(small.journal) as journal:
            before = journal.session(SESSION).version
        rows = {s.sessions: hook_latency.measure(s, reps=2) for s in (small, big)}
        table = hook_latency.render(rows, floor=10.0)
        assert set(rows) == {1, 3}
        for name in hook_latency.events(small):
            line = next(x for x in table if x.startswith(name))
            assert "p95 <= 300" in line
            assert all(len(rows[s][name]) == 2 for s in rows)
        for setup in (small, big):
            with eventstore.open(setup.journal) as journal:
                assert verify(journal) == []
                assert len(journal.sessions()) == setup.sessions
                assert journal.session(SESSION).version > before

    def test_the_percentile_is_a_nearest_rank(self) -> None:
        """p95 of 20 times is the 19th smallest; p50 of 4 the 2nd."""
        times = [float(t) for t in range(1, 21)]
        assert hook_latency.percentile(times, 95) == 19.0
        assert hook_latency.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.0

    def test_the_worker_timing_ingests_the_new_part(self, tmp_path: Path) -> None:
        """The worker's timed run ingests what the journal lacked; the copy it used holds it."""
        small, _ = hook_latency.prepare(tmp_path, mb=0.2, new_mb=0.05, others=0)
        first, again = hook_latency.worker(small, tmp_path, reps=1)
        assert first > 0
        assert again > 0
        with eventstore.open(tmp_path / "copy-1-0.db") as copy, eventstore.open(small.journal) as j:
            assert copy.session(SESSION).version > j.session(SESSION).version
