"""Small builders shared by the tests."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import attrs
import pytest

import eventstore
from eventstore import Session, SessionConfig
from eventstore._sqlite._schema import TRIGGERS

TURNS = SessionConfig(
    window_tokens=10_000,
    trigger_tokens=8_000,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="halt",
)


@contextlib.contextmanager
def behind_its_back(db: Path | str) -> Iterator[sqlite3.Connection]:
    """A plain connection to a journal file with its append-only triggers dropped and
    CHECKs off, committed and closed with the triggers put back as they were (as a
    careful forger would leave the file)."""
    conn = sqlite3.connect(db)
    try:
        conn.executescript(
            "DROP TRIGGER IF EXISTS events_no_update; DROP TRIGGER IF EXISTS events_no_delete;"
            "PRAGMA ignore_check_constraints = ON;"
        )
        yield conn
        for sql in TRIGGERS.values():
            conn.execute(sql)
        conn.commit()
    finally:
        conn.close()


def config(**changes: Any) -> SessionConfig:
    """A turns-unit config with ``changes`` applied."""
    return attrs.evolve(TURNS, **changes)


def rows(db: Path, sql: str = "SELECT * FROM events ORDER BY seq") -> list[tuple[Any, ...]]:
    """Rows read through a separate, plain sqlite3 connection."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def fill(s: Session, n: int, tokens: int = 10) -> None:
    """Append ``n`` plain turns."""
    for i in range(n):
        s.append_turn("user" if i % 2 else "assistant", f"turn {s.state.turns}", tokens)


def new_session(journal: eventstore.Journal, sid: str = "s", **changes: Any) -> Session:
    """A fresh session with the test config."""
    return journal.start_session(sid, config(**changes))


def _boundary(state: eventstore.SessionState, x: int) -> int:
    t = x % (state.turns + 1)
    return state.position_of_turn(t) if t < state.turns else state.end


def _compact(s: Session, p: dict[str, Any]) -> None:
    st = s.state
    lo, hi = sorted((_boundary(st, p["a"]), _boundary(st, p["b"])))
    if lo == hi:
        hi = st.end
    tail = hi if p["exact_seam"] else _boundary(st, p["tail"])
    carry = p["carry"]
    live = [n.node_id for n in st.live_nodes]
    s.compact(
        tier=p["tier"],
        input=(0, max(hi, tail)),
        covers=(lo, hi),
        tail_start=tail,
        summary=f"summary of [{lo}, {hi})",
        tokens=5,
        constraints=list(st.constraints) if carry else [],
        unresolved_ids=list(st.open_calls) if carry else [],
        dispositions={k: d.disposition for k, d in st.dispositions.items()} if carry else {},
        replaces=live[:1] if p["replace"] else [],
    )


def _span(state: eventstore.SessionState, p: dict[str, Any]) -> tuple[int, int]:
    lo, hi = sorted((_boundary(state, p["a"]), _boundary(state, p["b"])))
    return lo, hi


def run_step(s: Session, kind: str, p: dict[str, Any]) -> str:
    """Apply one scripted API call; returns 'ok' or the name of the error it raised."""
    st = s.state
    nodes, markers = sorted(st.nodes), sorted(st.markers)
    actions: dict[str, Callable[[], object]] = {
        "turn": lambda: s.append_turn(p.get("role", "u"), f"turn {st.turns}", p.get("tokens", 1)),
        "call": lambda: s.open_call(p["call"], "tool_call", "grep"),
        "resolve": lambda: s.resolve_call(p["call"], "ok"),
        "constraint": lambda: s.state_constraint(p["key"], f"rule {p['key']}"),
        "lift": lambda: s.lift_constraint(p["key"]),
        "dispose": lambda: s.dispose(p["key"], p["disp"], "because"),
        "truncate": lambda: s.truncate(*_span(st, p)),
        "spill": lambda: s.spill(*_span(st, p)),
        "checkpoint": s.checkpoint,
        "compact": lambda: _compact(s, p),
        "marker": lambda: s.emit_marker(nodes[p["a"] % len(nodes)] if nodes else "n0"),
        "resume": lambda: s.resume(markers[p["a"] % len(markers)] if markers else "m0"),
        "retract": lambda: s.retract_turn(p["a"] % (st.turns + 1), "pop_item"),
        "clear": lambda: s.clear_context("clear_session"),
        "restate": lambda: s.state_constraint(f"k{p['a'] % 2}", f"rule, take {p['b'] % 2}"),
        "retell": lambda: s.retell(p["a"] % 500 or None),
    }
    try:
        actions[kind]()
    except eventstore.JournalError as exc:
        return type(exc).__name__
    return "ok"


def refusing_session(journal: eventstore.Journal, sid: str = "r", turns: int = 4) -> Session:
    """A spilling session whose pending constraint was truncated: every ``refuse`` spills."""
    s = new_session(journal, sid, on_unsafe="spill")
    s.append_turn("user", "never modify files under /etc", 10)
    s.state_constraint("no-etc", "never modify files under /etc")
    fill(s, turns - 1)
    s.truncate(0, 1, "budget")
    return s


def refuse(s: Session) -> eventstore.Spill:
    """Propose a compaction that drops the constraint; return the spill its refusal wrote."""
    end = s.state.end
    try:
        s.compact(tier=1, input=(0, end), covers=(0, end), tail_start=end, summary="x", tokens=1)
    except eventstore.UnrecoverableCompactionError:
        return s.state.spills[-1]
    raise AssertionError("the compaction was not refused")


def real_part_missing(reason: str, required_by: str) -> NoReturn:
    """Skip a test whose real part (a CLI, a server) cannot run, or fail it where the
    environment variable ``required_by`` says it must run (CI)."""
    if os.environ.get(required_by):
        pytest.fail(reason)
    pytest.skip(reason)
