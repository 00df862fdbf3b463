"""How ``journal-0.2.db`` was made: run with tierlog 0.2 (commit dcf2bb5), never again.

    git worktree add /tmp/tierlog-0.2 dcf2bb5
    PYTHONPATH=/tmp/tierlog-0.2 .venv/bin/python tests/data/journal-0.2/make.py

It writes ``journal-0.2.db``, its spill folder and ``expected.json`` (each session's
head version and state sha256 as 0.2 computed them) beside this script. The sessions
hold what 0.2 accepted and later rules judge: a node that lists an open call as
resolved, a constraint re-stated with new text after a node carried it, a refused
marker that spilled nothing, and the SPEC's two incidents.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import eventstore
from eventstore import MarkerInvalid, SessionConfig, UnrecoverableCompactionError

HERE = Path(__file__).resolve().parent
DB = HERE / "journal-0.2.db"
CLOCK = iter(f"2026-12-01T00:{m:02d}:{s:02d}.000000+00:00" for m in range(60) for s in range(60))
TURNS = SessionConfig(
    window_tokens=1_000,
    trigger_tokens=800,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="spill",
)


def _claims(journal: eventstore.Journal) -> None:
    """Claims 0.2 took on trust: a call listed as resolved while open, a constraint
    carried by key whose text then changed."""
    s = journal.start_session("claims", TURNS)
    s.append_turn("user", "Never modify files under /etc. Run the migration dry run.", 20)
    s.state_constraint("no-etc", "never modify files under /etc")
    s.open_call("call-1", "tool_call", "./migrate --dry-run")
    for i in range(4):
        s.append_turn("tool", f"dry run output {i}", 40)
    node = s.compact(
        tier=1,
        input=(0, 5),
        covers=(0, 5),
        tail_start=5,
        summary="dry run done; never touch /etc",
        tokens=12,
        constraints=["no-etc"],
        resolved_ids=["call-1"],  # the log still holds call-1 open
    )
    s.emit_marker(node.node_id)
    with contextlib.suppress(eventstore.InvalidEvent):
        s.state_constraint("no-etc", "never modify files under /etc or /usr")
    s.append_turn("assistant", "continuing", 10)


def _dropped(journal: eventstore.Journal) -> None:
    """A node that drops a rejected approach: its marker is refused, nothing spilled."""
    s = journal.start_session("dropped", TURNS)
    s.append_turn("user", "Make the migration reversible.", 20)
    s.append_turn("tool", "add-column-then-backfill: dry run failed", 30)
    s.dispose("add-column-then-backfill", "rejected", "dry run failed; user rejected it")
    for i in range(3):
        s.append_turn("tool", f"output {i}", 40)
    s.checkpoint()
    node = s.compact(
        tier=1, input=(0, 5), covers=(0, 5), tail_start=5, summary="explored approaches", tokens=9
    )
    with contextlib.suppress(MarkerInvalid):
        s.emit_marker(node.node_id)
    s.resume(f"m{s.state.version}")


def main() -> None:
    for path in (DB, DB.with_name(DB.name + ".spills")):
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    with eventstore.open(DB, clock=lambda: next(CLOCK)) as journal:
        _claims(journal)
        _dropped(journal)
        from eventstore._incidents import dropped_rejection, evicted_constraint  # 0.2's demo

        with contextlib.suppress(UnrecoverableCompactionError, MarkerInvalid):
            dropped_rejection(journal, lambda *_: None)
        with contextlib.suppress(UnrecoverableCompactionError, MarkerInvalid):
            evicted_constraint(journal, lambda *_: None)
        expected = {
            sid: {"version": journal.session(sid).state.version,
                  "sha256": journal.session(sid).state.sha256}
            for sid in journal.sessions()
        }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
