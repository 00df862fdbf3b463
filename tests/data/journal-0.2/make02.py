"""How ``journal-0.2.db`` was made: run at commit 7f159ab (before the claim checks of
issue 22), never again.

    .venv/bin/python tests/data/journal-0.2/make02.py

Four sessions, written before a node's claims were checked against the ledger and
before a refused marker spilled its evidence. ``honest`` re-decides the same under
every later rule; each of the other three holds one decision a later rule makes
differently, and ``expected.json`` names the version where it does. The tests check
that the current code opens, replays and verifies the journal, and that each
divergence message names the rule the journal predates.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import eventstore
from eventstore import MarkerInvalid, Session, SessionConfig

HERE = Path(__file__).resolve().parent
DB = HERE / "journal-0.2.db"
CLOCK = iter(f"2026-02-01T00:00:{s:02d}.000000+00:00" for s in range(60))


def _config(on_unsafe: str) -> SessionConfig:
    return SessionConfig(
        window_tokens=1_000,
        trigger_tokens=800,
        truncator_unit="turns",
        floor_span=2,
        floor_unit="turns",
        on_unsafe=on_unsafe,
    )


def _opening(s: Session) -> None:
    s.append_turn("user", "Add tenant_id. Never modify files under /etc.", 20)
    s.state_constraint("no-etc", "never modify files under /etc")
    s.append_turn("assistant", "Plan A: backfill first.", 10)
    s.dispose("backfill-first", "rejected", "the user rejected it")
    s.open_call("grep-1", "tool_call", "grep -rn tenant_id")
    s.append_turn("tool", "migrations/003_up.sql:4: tenant_id", 30)


def _honest(journal: eventstore.Journal) -> None:
    """Every claim true: the current rules decide each event as recorded."""
    s = journal.start_session("honest", _config("spill"))
    _opening(s)
    s.resolve_call("grep-1", "1 match")
    s.state_constraint("no-etc", "never modify files under /etc")  # the same text again
    s.append_turn("assistant", "Plan B: shadow table.", 10)
    node = s.compact(
        tier=1,
        input=(0, 3),
        covers=(0, 3),
        tail_start=3,
        summary="tenant_id found; backfill-first rejected",
        tokens=9,
        constraints=["no-etc"],
        dispositions={"backfill-first": "rejected"},
        resolved_ids=["grep-1"],
    )
    marker = s.emit_marker(node.node_id)
    s.resume(marker.marker_id)


def _false_closure(journal: eventstore.Journal) -> None:
    """A node lists as resolved a call the log holds open (now ``false_closure``)."""
    s = journal.start_session("false-closure", _config("halt"))
    _opening(s)
    s.append_turn("assistant", "next", 5)
    node = s.compact(
        tier=1,
        input=(0, 3),
        covers=(0, 3),
        tail_start=3,
        summary="grep done",
        tokens=9,
        constraints=["no-etc"],
        dispositions={"backfill-first": "rejected"},
        resolved_ids=["grep-1"],
    )
    s.emit_marker(node.node_id)


def _restated(journal: eventstore.Journal) -> None:
    """A node carries ``no-etc``; the user restates it with another text while the last
    turn is folded (the node no longer carries the live text)."""
    s = journal.start_session("restated-constraint", _config("halt"))
    _opening(s)
    s.resolve_call("grep-1", "1 match")
    node = s.compact(
        tier=1,
        input=(0, 3),
        covers=(0, 3),
        tail_start=3,
        summary="never modify /etc; backfill-first rejected",
        tokens=9,
        constraints=["no-etc"],
        dispositions={"backfill-first": "rejected"},
        resolved_ids=["grep-1"],
    )
    s.emit_marker(node.node_id)
    s.state_constraint("no-etc", "never modify files under /etc or /usr")


def _marker_refusal(journal: eventstore.Journal) -> None:
    """A node drops a rejection; its marker is refused and, then, nothing was spilled."""
    s = journal.start_session("marker-refusal", _config("spill"))
    _opening(s)
    s.resolve_call("grep-1", "1 match")
    s.append_turn("assistant", "next", 5)
    node = s.compact(
        tier=1,
        input=(0, 3),
        covers=(0, 3),
        tail_start=3,
        summary="explored approaches",
        tokens=9,
        constraints=["no-etc"],
        resolved_ids=["grep-1"],
    )
    with contextlib.suppress(MarkerInvalid):
        s.emit_marker(node.node_id)


def main() -> None:
    for path in (DB, Path(f"{DB}-wal"), Path(f"{DB}-shm")):
        path.unlink(missing_ok=True)
    with eventstore.open(DB, clock=lambda: next(CLOCK)) as journal:
        for make in (_honest, _false_closure, _restated, _marker_refusal):
            make(journal)
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
