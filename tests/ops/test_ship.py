"""``tierlog ship`` and ``tierlog spill``: local journals shipped verbatim to a central
one (SQLite to PostgreSQL above all, but any pair), spills read back checked."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

import eventstore
from eventstore._ops._ship import ship
from eventstore.cli import main
from tests.helpers import fill, new_session
from tests.targets import SqliteTarget, Target, on_both

README = Path(__file__).resolve().parents[2] / "README.md"
VERBATIM = "SELECT session_id, version, type, schema_version, payload, recorded_at, prev_hash, hash"
ALL_ROWS = f"{VERBATIM} FROM events ORDER BY session_id, version"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(name="demo")
def _demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> SqliteTarget:
    """The demo journal, a SQLite file: the usual source."""
    source = SqliteTarget(tmp_path / "demo.db")
    assert run(capsys, "demo", "--db", source.location)[0] == 0
    return source


@pytest.fixture(name="pg")
def _pg(pg_url: str) -> Target:
    from tests.targets import PostgresTarget

    return PostgresTarget(pg_url)


class TestShipToPostgres:
    def test_demo_ships_once_then_nothing_and_audits_the_same(
        self, capsys: pytest.CaptureFixture[str], demo: SqliteTarget, pg: Target
    ) -> None:
        """Shipped twice (the second ships nothing), the URL verifies and audits exactly as
        the file does, with every row verbatim."""
        code, out, _ = run(capsys, "ship", demo.location, pg.location, "--json")
        first = json.loads(out)
        assert code == 0
        assert sum(r["events"] for r in first) == len(demo.rows())
        assert sum(r["spills"] for r in first) == 2
        code, out, _ = run(capsys, "ship", demo.location, pg.location, "--json")
        assert (code, [r["events"] for r in json.loads(out)]) == (0, [0, 0, 0, 0])
        assert pg.rows(ALL_ROWS) == demo.rows(ALL_ROWS)
        for command in (["verify"], ["audit", "--json"], ["sessions", "--json"]):
            local = run(capsys, command[0], demo.location, *command[1:])
            central = run(capsys, command[0], pg.location, *command[1:])
            assert central == local, command

    def test_the_readme_audit_queries_answer_the_same_on_both(
        self, demo: SqliteTarget, pg: Target
    ) -> None:
        """Every query of the README's "Audit with SQL" block runs unchanged on the URL
        and returns the file's rows."""
        block = README.read_text().split("## Audit with SQL", 1)[1].split("```sql", 1)[1]
        text = block.split("```", 1)[0]
        queries = [q.strip() for q in re.sub(r"--[^\n]*", "", text).split(";") if q.strip()]
        assert len(queries) == 5
        with demo.open(readonly=True) as src, pg.open() as dest:
            ship(src, dest)
            for sql in queries:
                local = src.recorder.query(sql, timeout=10).rows
                central = dest.recorder.query(sql, timeout=10).rows
                assert sorted(map(tuple, central)) == sorted(map(tuple, local)), sql

    def test_state_and_spills_match_after_shipping(self, demo: SqliteTarget, pg: Target) -> None:
        """Every session folds to the same state sha256, and its spills read back."""
        with demo.open(readonly=True) as src, pg.open() as dest:
            ship(src, dest)
            for sid in src.sessions():
                state = src.session(sid).state
                assert dest.session(sid).state.sha256 == state.sha256
                for spill in state.spills:
                    assert dest.read_spill(sid, spill.handle) == src.read_spill(sid, spill.handle)

    def test_resumes_after_a_partial_ship_in_small_chunks(
        self, capsys: pytest.CaptureFixture[str], demo: SqliteTarget, pg: Target, tmp_path: Path
    ) -> None:
        """A ship of one session's prefix, then a full one in chunks of 7, ends verbatim."""
        partial = SqliteTarget(tmp_path / "partial.db")
        with demo.open(readonly=True) as src, partial.open() as part:
            rows = list(src.recorder.read("incident-2-evicted-constraint", stop=40))
            part.recorder.append_recorded("incident-2-evicted-constraint", rows)
        assert run(capsys, "ship", partial.location, pg.location)[0] == 0
        code, out, _ = run(capsys, "ship", demo.location, pg.location, "--chunk", "7")
        assert code == 0
        assert "incident-2-evicted-constraint: shipped 55 event(s), v41..v95, 1 spill(s)" in out
        assert pg.rows(ALL_ROWS) == demo.rows(ALL_ROWS)

    def test_one_session_only(
        self, capsys: pytest.CaptureFixture[str], demo: SqliteTarget, pg: Target
    ) -> None:
        """--session ships that session alone; an unknown one exits 2."""
        code, out, _ = run(
            capsys, "ship", demo.location, pg.location, "--session", "incident-1-depth-change"
        )
        assert (code, out.count("shipped")) == (0, 1)
        assert pg.rows("SELECT DISTINCT session_id FROM events") == [("incident-1-depth-change",)]
        assert run(capsys, "ship", demo.location, pg.location, "--session", "ghost")[0] == 2


@on_both
class TestShipRefuses:
    def test_a_differing_history_exits_1_naming_the_version(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, target: Target
    ) -> None:
        """A session that exists in DEST with another history is refused at the first
        differing version; the others still ship, and DEST's rows are untouched."""
        source = SqliteTarget(tmp_path / "host.db")
        with source.open() as src, target.open() as dest:
            fill(new_session(src, "s"), 6)
            fill(new_session(src, "t"), 2)
            fill(new_session(dest, "s"), 3)  # same config, other turns from v2 on
        before = target.rows("SELECT * FROM events WHERE session_id = 's'")
        code, out, _ = run(capsys, "ship", source.location, target.location)
        assert code == 1
        assert "s: not shipped:" in out
        assert "differs from the source's at v" in out
        assert "t: shipped 3 event(s)" in out
        assert target.rows("SELECT * FROM events WHERE session_id = 's'") == before

    def test_a_destination_ahead_of_the_source_is_refused(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, target: Target
    ) -> None:
        """DEST holding more of a session than SRC is a differing history at SRC's end + 1."""
        source = SqliteTarget(tmp_path / "host.db")
        with source.open() as src:
            fill(new_session(src, "s"), 2)
        assert run(capsys, "ship", source.location, target.location)[0] == 0
        with target.open() as dest:
            dest.session("s").append_turn("user", "only here", 1)
        code, out, _ = run(capsys, "ship", source.location, target.location, "--json")
        (result,) = json.loads(out)
        assert (code, result["differs_at"]) == (1, 4)

    def test_a_tampered_source_row_is_not_shipped(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, target: Target
    ) -> None:
        """A source session that does not verify is not shipped (the finding named); with
        --allow-findings the rows before the bad one are, and no bad row ever is."""
        source = SqliteTarget(tmp_path / "host.db")
        with source.open() as src:
            fill(new_session(src, "s"), 6)
        source.tamper("UPDATE events SET recorded_at = '2020-01-01' WHERE version = 4")
        code, out, _ = run(capsys, "ship", source.location, target.location, "--chunk", "2")
        assert code == 1
        assert "s: not shipped: session 's' does not verify: chain v4: hash does not" in out
        assert target.rows("SELECT version FROM events ORDER BY version") == []
        args = ("ship", source.location, target.location, "--chunk", "2", "--allow-findings")
        code, out, _ = run(capsys, *args)
        assert code == 1
        assert "session 's' v4: hash does not match" in out
        assert [v for (v,) in target.rows("SELECT version FROM events ORDER BY version")] == [1, 2]

    def test_a_destination_head_edited_behind_its_back_is_not_appended_onto(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, target: Target
    ) -> None:
        """A DEST head whose content was edited (its hash kept, so it no longer links) is
        a differing history at that version: nothing is appended onto it."""
        source = SqliteTarget(tmp_path / "host.db")
        with source.open() as src:
            fill(new_session(src, "s"), 3)
        assert run(capsys, "ship", source.location, target.location)[0] == 0
        target.tamper(
            "UPDATE events SET payload = replace(payload, 'turn', 'TURN') WHERE version = 4"
        )
        with source.open() as src:
            fill(src.session("s"), 2)
        code, out, _ = run(capsys, "ship", source.location, target.location, "--json")
        (result,) = json.loads(out)
        assert (code, result["events"], result["differs_at"]) == (1, 0, 4)
        assert target.rows("SELECT max(version) FROM events") == [(4,)]


class TestShipBackwards:
    def test_postgres_to_sqlite(
        self, capsys: pytest.CaptureFixture[str], demo: SqliteTarget, pg: Target, tmp_path: Path
    ) -> None:
        """The central journal ships back into a fresh file, verbatim, and verifies there."""
        assert run(capsys, "ship", demo.location, pg.location)[0] == 0
        copy = SqliteTarget(tmp_path / "copy" / "demo.db")
        copy.path.parent.mkdir()
        assert run(capsys, "ship", pg.location, copy.location)[0] == 0
        assert copy.rows(ALL_ROWS) == demo.rows(ALL_ROWS)
        assert run(capsys, "verify", copy.location)[0] == 0


@on_both
class TestSpillCommand:
    def test_prints_the_checked_bytes(
        self, capsysbinary: pytest.CaptureFixture[bytes], target: Target
    ) -> None:
        """tierlog spill prints exactly the recorded bytes of a spill."""
        with target.open() as journal:
            s = new_session(journal)
            fill(s, 4)
            spill = s.spill(1, 3)
        assert main(["spill", target.location, "s", spill.handle]) == 0
        out = capsysbinary.readouterr().out
        assert (hashlib.sha256(out).hexdigest(), len(out)) == (spill.sha256, spill.bytes)
        assert out.splitlines()[0].startswith(b'{"content":"turn 1"')

    def test_changed_bytes_exit_1_unknown_handle_exits_2(
        self, capsys: pytest.CaptureFixture[str], target: Target
    ) -> None:
        """Bytes that no longer match exit 1 and print nothing; an unknown handle exits 2."""
        with target.open() as journal:
            s = new_session(journal)
            fill(s, 4)
            spill = s.spill(1, 3)
        stored = target.spill(spill.handle)
        assert stored is not None
        target.set_spill(spill.handle, stored.replace(b"turn", b"TURN"))
        code, out, err = run(capsys, "spill", target.location, "s", spill.handle)
        assert (code, out) == (1, "")
        assert "does not match its recorded sha256" in err
        code, _, err = run(capsys, "spill", target.location, "s", "nope.jsonl")
        assert (code, "recorded no spill 'nope.jsonl'" in err) == (2, True)

    def test_an_unrecorded_handle_is_refused(self, target: Target) -> None:
        """The Python API refuses a spill it never recorded, whatever the handle."""
        with target.open() as journal:
            fill(new_session(journal), 2)
            with pytest.raises(eventstore.InvalidEvent, match="recorded no spill"):
                journal.read_spill("s", "../../etc/hostname")


@on_both
class TestShipRace:
    def test_a_ship_that_loses_the_race_to_another_still_succeeds(
        self,
        demo: SqliteTarget,
        target: Target,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """When another ship commits the same rows first, the slower one finds them in
        the destination and reports success (exit 0), not "not shipped"."""
        from eventstore._ops import _ship

        real = _ship._ship_chunk
        raced: list[str] = []

        def racing(*args: Any) -> int:
            session_id = args[2]
            if session_id not in raced:
                raced.append(session_id)
                with (
                    eventstore.open(demo.location, readonly=True) as other_src,
                    eventstore.open(target.location) as other_dest,
                ):
                    ship(other_src, other_dest, [session_id])
            return real(*args)

        monkeypatch.setattr(_ship, "_ship_chunk", racing)
        code, out, err = run(capsys, "ship", demo.location, target.location)
        assert (code, err) == (0, "")
        assert "not shipped" not in out
        assert len(raced) == len(demo.rows("SELECT DISTINCT session_id FROM events"))
        assert run(capsys, "verify", target.location)[0] == 0
        assert target.rows(ALL_ROWS) == demo.rows(ALL_ROWS)
