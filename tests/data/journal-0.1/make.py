"""How ``journal-0.1.db`` was made: run with tierlog 0.1 (commit 7079028), never again.

    .venv/bin/python tests/data/journal-0.1/make.py

It writes ``journal-0.1.db``, its spill folder ``journal-0.1.db.spills/`` (handles of
the 0.1 form ``journal-0.1.db.spills/<session>/v<version>_<lo>-<hi>.jsonl``) and
``expected.json`` (each session's head version and state sha256 as 0.1 computed
them) beside this script. The tests copy the three into a temporary folder and
check that the current code verifies the journal, replays every session to the
recorded sha256 and reads back every spill, also after the journal is renamed.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from pathlib import Path

import eventstore
from eventstore import SessionConfig, UnrecoverableCompactionError

HERE = Path(__file__).resolve().parent
DB = HERE / "journal-0.1.db"
CLOCK = iter(f"2026-01-01T00:00:{s:02d}.000000+00:00" for s in range(60))


def _turns_session(journal: eventstore.Journal) -> None:
    s = journal.start_session(
        "legacy-turns",
        SessionConfig(
            window_tokens=1_000,
            trigger_tokens=800,
            truncator_unit="turns",
            floor_span=2,
            floor_unit="turns",
            on_unsafe="spill",
        ),
    )
    s.append_turn("user", "Add tenant_id. Never modify files under /etc. ünïcode ✓", 20)
    s.state_constraint("no-etc", "never modify files under /etc")
    s.open_call("call-1", "tool_call", "grep -rn tenant_id")
    for i in range(5):
        s.append_turn("tool", f"output {i}", 50)
    s.spill(0, 3)
    s.truncate(0, 2, "budget")
    with contextlib.suppress(UnrecoverableCompactionError):
        s.compact(tier=1, input=(0, 6), covers=(0, 6), tail_start=6, summary="grep", tokens=9)
    s.checkpoint()
    node = s.compact(
        tier=1,
        input=(0, 6),
        covers=(0, 6),
        tail_start=6,
        summary="grepped for tenant_id",
        tokens=9,
        constraints=["no-etc"],
        unresolved_ids=["call-1"],
    )
    s.append_turn("assistant", "next", 5)
    marker = s.emit_marker(node.node_id)
    s.resume(marker.marker_id)


def _tokens_session(journal: eventstore.Journal) -> None:
    s = journal.start_session(
        "legacy-tokens",
        SessionConfig(
            window_tokens=2_000,
            trigger_tokens=1_600,
            truncator_unit="tokens",
            floor_span=100,
            floor_unit="tokens",
            on_unsafe="spill",
        ),
    )
    s.append_turn("user", "keep the migration reversible", 30)
    s.dispose("backfill-first", "rejected", "user rejected it")
    for i in range(4):
        s.append_turn("tool", f"step {i}", 40)
    s.truncate(0, 70, "budget")
    with contextlib.suppress(UnrecoverableCompactionError):
        s.compact(tier=1, input=(30, 190), covers=(30, 190), tail_start=190, summary="x", tokens=4)


def main() -> None:
    for path in (DB, Path(f"{DB}-wal"), Path(f"{DB}-shm")):
        path.unlink(missing_ok=True)
    shutil.rmtree(f"{DB}.spills", ignore_errors=True)
    with eventstore.open(DB, snapshot_every=5, clock=lambda: next(CLOCK)) as journal:
        _turns_session(journal)
        _tokens_session(journal)
        expected = {
            sid: {"version": state.version, "sha256": state.sha256}
            for sid in journal.sessions()
            for state in [journal.session(sid).state]
        }
    conn = sqlite3.connect(DB)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    (HERE / "expected.json").write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
