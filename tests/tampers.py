"""Tampers a hostile reviewer tries on a journal behind tierlog's back, on both backends.

``story`` writes one session with something of everything a tamper can aim at (turns,
a spill, a compaction and a marker on it, a re-compaction that invalidates the
marker, snapshots); each :class:`Tamper` edits it in place, the careful ones forging
the hash chain again so that only what ``verify`` re-derives can find them. Every
tamper here is one ``verify`` detects; ``check`` is what it reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs

import eventstore
from eventstore._store import GENESIS, chain_hash
from tests.helpers import fill, new_session
from tests.targets import Target

SID = "s"
Row = tuple[Any, ...]  # seq, version, type, schema_version, payload, recorded_at


def story(journal: eventstore.Journal, sid: str = SID) -> None:
    """A session of about twenty events: turns, a spill, compaction A with a marker,
    then an L2 re-compaction B of A, which invalidates the marker (M3)."""
    s = new_session(journal, sid, on_unsafe="spill")
    fill(s, 4)
    s.spill(0, 2)
    a = s.compact(tier=1, input=(0, 4), covers=(0, 4), tail_start=4, summary="A", tokens=5)
    s.emit_marker(a.node_id)
    fill(s, 4)
    end = s.state.end
    s.compact(
        tier=2, input=(0, end), covers=(0, end), tail_start=end, summary="B", tokens=5,
        replaces=[a.node_id],
    )  # fmt: skip
    fill(s, 2)


def _rows(target: Target, sid: str) -> list[Row]:
    return [
        tuple(r)
        for r in target.rows(
            "SELECT seq, version, type, schema_version, payload, recorded_at FROM events"
            f" WHERE session_id = '{sid}' ORDER BY version"
        )
    ]


def behind(target: Target, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Parameterised statements (``?`` markers) behind tierlog's back, in one go."""
    if target.backend == "sqlite":
        from tests.helpers import behind_its_back

        with behind_its_back(target.location) as conn:
            for sql, params in statements:
                conn.execute(sql, params)
        return
    import psycopg

    with psycopg.connect(target.location, autocommit=False) as conn:
        conn.execute("SET session_replication_role = replica")  # no user triggers
        for sql, params in statements:
            conn.execute(sql.replace("?", "%s"), params)


def forge_chain(target: Target, sid: str = SID) -> None:
    """Every row's prev_hash and hash computed again: a chain that links, whatever it holds."""
    prev, updates = GENESIS, []
    for seq, version, kind, schema, payload, at in _rows(target, sid):
        digest = chain_hash(prev, sid, version, kind, schema, payload, at)
        updates.append(
            ("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, digest, seq))
        )
        prev = digest
    behind(target, updates)


def _edit_payload(target: Target, kind: str, change: Callable[[dict[str, Any]], None]) -> None:
    """The first event of ``kind``: its payload changed, written back canonical."""
    seq, _, _, _, payload, _ = next(r for r in _rows(target, SID) if r[2] == kind)
    data = json.loads(payload)
    change(data)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    behind(target, [("UPDATE events SET payload = ? WHERE seq = ?", (text, seq))])


def _version_of(target: Target, kind: str) -> int:
    return int(next(r for r in _rows(target, SID) if r[2] == kind)[1])


@attrs.frozen
class Tamper:
    """One edit behind tierlog's back, and the check of ``verify`` that reports it."""

    name: str
    apply: Callable[[Target], None]
    check: str
    forged: bool = False  # the chain was computed again: only a re-derivation finds it

    def __str__(self) -> str:
        return self.name


def _turn_text(target: Target) -> None:
    _edit_payload(target, "TurnAppended", lambda p: p.update(content="rm -rf /etc"))


def _unsafe_compaction(target: Target) -> None:
    _edit_payload(target, "Compacted", lambda p: p.update(covers_hi=2))  # a seam hole
    forge_chain(target)


def _dropped_invalidation(target: Target) -> None:
    """The MarkerInvalidated row deleted, later versions moved down, the chain forged."""
    gone = _version_of(target, "MarkerInvalidated")
    later = [r for r in _rows(target, SID) if r[1] > gone]
    statements = [("DELETE FROM events WHERE session_id = ? AND version = ?", (SID, gone))]
    statements += [("UPDATE events SET version = ? WHERE seq = ?", (r[1] - 1, r[0])) for r in later]
    behind(target, statements)
    forge_chain(target)


def _spill_sha(target: Target) -> None:
    _edit_payload(target, "Spilled", lambda p: p.update(sha256="0" * 64))
    forge_chain(target)


def _spill_bytes(target: Target) -> None:
    with eventstore.open(target.location, readonly=True) as journal:
        (spill,) = journal.session(SID).state.spills
    data = target.spill(spill.handle)
    assert data is not None
    target.set_spill(spill.handle, data.replace(b"turn", b"TURN"))


def _deleted_row(target: Target) -> None:
    behind(target, [("DELETE FROM events WHERE session_id = ? AND version = ?", (SID, 3))])


def _swapped_rows(target: Target) -> None:
    (a, *_), (b, *_) = [r for r in _rows(target, SID) if r[1] in (3, 4)]
    behind(
        target,
        [
            ("UPDATE events SET version = 1000000 WHERE seq = ?", (a,)),
            ("UPDATE events SET version = 3 WHERE seq = ?", (b,)),
            ("UPDATE events SET version = 4 WHERE seq = ?", (a,)),
        ],
    )


def _recorded_at(target: Target) -> None:
    behind(
        target,
        [("UPDATE events SET recorded_at = ? WHERE session_id = ? AND version = ?",
          ("2020-01-01T00:00:00.000000+00:00", SID, 5))],
    )  # fmt: skip


def _snapshot(target: Target) -> None:
    behind(target, [("UPDATE snapshots SET sha256 = ? WHERE session_id = ?", ("0" * 64, SID))])


TAMPERS = (
    Tamper("a turn's text edited", _turn_text, "chain"),
    Tamper("a row deleted", _deleted_row, "chain"),
    Tamper("two rows swapped", _swapped_rows, "chain"),
    Tamper("a timestamp edited", _recorded_at, "chain"),
    Tamper("a compaction made unsafe, chain forged", _unsafe_compaction, "replay", forged=True),
    Tamper("an invalidation deleted, chain forged", _dropped_invalidation, "replay", forged=True),
    Tamper("a Spilled sha256 edited, chain forged", _spill_sha, "spill", forged=True),
    Tamper("a spill's bytes replaced", _spill_bytes, "spill"),
    Tamper("the snapshot edited", _snapshot, "snapshot"),
)
