"""The tierlog CLI, called in-process (and once as a subprocess).

The commands that read or write a journal run on both backends: ``DB`` is a SQLite
file or a PostgreSQL URL.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import eventstore
import reducers
from eventstore.cli import build_parser, main
from tests.helpers import fill, new_session
from tests.tampers import behind
from tests.targets import SqliteTarget, Target, on_both

ROOT = Path(__file__).resolve().parents[2]


def _by_hand(rows: list[dict[str, Any]]) -> str:
    """Edited export lines, written as by hand: without hashes they no longer match (the
    trailer says so: its head hash is null)."""
    return "".join(
        json.dumps(
            {k: v for k, v in row.items() if k not in ("hash", "recorded_at")}
            if "end_of_session" not in row
            else {**row, "hash": None}
        )
        + "\n"
        for row in rows
    )


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(name="demo_db")
def _demo_db(target: Target, capsys: pytest.CaptureFixture[str]) -> str:
    """The demo journal (a file or a URL)."""
    assert run(capsys, "demo", "--db", target.location)[0] == 0
    return target.location


@pytest.fixture(name="long_db")
def _long_db(target: Target) -> str:
    with target.open(synchronous="normal", snapshot_every=150) as journal:
        s = new_session(journal, "long")
        for i in range(400):
            s.append_turn("tool", f"output {i}", 10 + i % 7)
            if i % 50 == 49:
                s.truncate(0, i - 20, "budget")
                s.checkpoint()
    return target.location


class TestHelp:
    def test_every_command_has_help_with_an_example(self) -> None:
        """Each subcommand documents itself and shows an example line."""
        parser = build_parser()
        subs = next(a for a in parser._actions if a.dest == "command")
        for name, sub in subs.choices.items():  # type: ignore[union-attr]
            text = sub.format_help()
            assert f"tierlog {name}" in text, name
            assert "example:" in text, name

    @pytest.mark.parametrize(
        "argv",
        [[], ["frobnicate"], ["state"], ["state", "x.db", "s", "--at", "seven"], ["log", "--bad"]],
    )
    def test_usage_errors_exit_2(self, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
        """Bad arguments exit 2 with a usage message, never a traceback."""
        code, _, err = run(capsys, *argv)
        assert code == 2
        assert "usage:" in err
        assert "Traceback" not in err


class TestReading:
    def test_missing_and_foreign_files_exit_2(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """A missing file or a non-journal file is a clear error with exit 2."""
        code, _, err = run(capsys, "sessions", str(tmp_path / "nope.db"))
        assert (code, "no journal at" in err) == (2, True)
        junk = tmp_path / "junk.db"
        junk.write_text("hello")
        code, _, err = run(capsys, "sessions", str(junk))
        assert (code, "not a tierlog journal" in err) == (2, True)

    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            (["export", "DB", "incident-1-depth-change", "-o", "/no/such/dir/x.jsonl"], "x.jsonl"),
            (["import", "DB", "/no/such/file.jsonl"], "file.jsonl"),
            (["sql", "DB", "  "], "empty query"),
            (["state", "DB", "incident-1-depth-change", "--at", "999"], "outside 0..22"),
        ],
    )
    @on_both
    def test_bad_input_exits_2_with_a_message(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, argv: list[str], message: str
    ) -> None:
        """Unwritable outputs, unreadable inputs and impossible versions: exit 2, one line."""
        code, _, err = run(capsys, *[str(demo_db) if a == "DB" else a for a in argv])
        assert code == 2
        assert message in err
        assert "Traceback" not in err

    @on_both
    def test_sessions_lists_counts(self, capsys: pytest.CaptureFixture[str], demo_db: str) -> None:
        """sessions --json shows each demo session with its refusals and invalidations."""
        code, out, _ = run(capsys, "sessions", str(demo_db), "--json")
        by_id = {row["session_id"]: row for row in json.loads(out)}
        assert code == 0
        assert by_id["incident-1-depth-change"]["invalidations"] == 1
        assert by_id["incident-2-evicted-constraint"]["refusals"] == 1

    @on_both
    def test_log_range(self, capsys: pytest.CaptureFixture[str], long_db: str) -> None:
        """log --from/--to prints exactly that window, one event a line."""
        code, out, _ = run(capsys, "log", str(long_db), "long", "--from", "5", "--to", "9")
        assert code == 0
        assert [int(line.split()[0]) for line in out.splitlines()] == [5, 6, 7, 8, 9]

    @on_both
    def test_state_at_equals_replay_of_prefix(
        self, capsys: pytest.CaptureFixture[str], long_db: str
    ) -> None:
        """state --at V is the fold of the first V events, hash included."""
        code, out, _ = run(capsys, "state", str(long_db), "long", "--at", "250", "--json")
        with eventstore.open(long_db) as journal:
            events = list(journal.session("long").events(stop=250))
        assert code == 0
        assert json.loads(out)["sha256"] == reducers.fold(events).sha256

    def test_state_hash_is_identical_across_processes(
        self, capsys: pytest.CaptureFixture[str], long_db: str
    ) -> None:
        """A separate Python process computes the same state sha256."""
        _, out, _ = run(capsys, "state", str(long_db), "long", "--at", "300", "--json")
        child = subprocess.run(
            [
                sys.executable,
                "-m",
                "eventstore",
                "state",
                str(long_db),
                "long",
                "--at",
                "300",
                "--json",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(child.stdout)["sha256"] == json.loads(out)["sha256"]

    @on_both
    def test_diff_names_changes(self, capsys: pytest.CaptureFixture[str], demo_db: str) -> None:
        """diff shows the L2 node added and the L1 node replaced."""
        code, out, _ = run(capsys, "diff", str(demo_db), "incident-1-depth-change", "17", "21")
        assert code == 0
        assert "+ nodes.n20" in out
        assert "~ nodes.n17.live: true -> false" in out


class TestVerify:
    @on_both
    def test_clean_journal_verifies(self, capsys: pytest.CaptureFixture[str], demo_db: str) -> None:
        """The demo journal verifies: exit 0, and no progress line when not on a terminal."""
        code, out, err = run(capsys, "verify", str(demo_db))
        assert "\r" not in err
        assert (code, out.startswith("ok")) == (0, True)

    @on_both
    def test_tampered_payload_names_session_and_version(
        self, capsys: pytest.CaptureFixture[str], target: Target, demo_db: str
    ) -> None:
        """A payload edited by hand makes verify exit 1 naming the session and version."""
        edit = {
            "sqlite": "json_set(payload, '$.summary', 'all good')",
            "postgres": "jsonb_set(payload::jsonb, '{summary}', '\"all good\"')::text",
        }[target.backend]
        target.tamper(
            f"UPDATE events SET payload = {edit}"
            " WHERE session_id = 'incident-1-dropped-rejection' AND version = 17"
        )
        code, out, _ = run(capsys, "verify", str(demo_db), "--json")
        (finding,) = json.loads(out)
        assert code == 1
        assert (finding["session_id"], finding["version"], finding["check"]) == (
            "incident-1-dropped-rejection",
            17,
            "chain",
        )

    @on_both
    def test_decision_the_checks_refuse_is_a_divergence(
        self, capsys: pytest.CaptureFixture[str], target: Target
    ) -> None:
        """A well-chained Compacted that C4 refuses is reported at its version."""
        with target.open() as journal:
            fill(new_session(journal), 6)
        hole = reducers.Compacted(
            node_id="n8",
            tier=1,
            input_lo=0,
            input_hi=6,
            covers_lo=0,
            covers_hi=4,
            tail_start=6,
            summary="s",
            tokens=1,
        )
        with target.open() as journal:
            journal.recorder.append("s", [hole], expected_version=7)
        code, out, _ = run(capsys, "verify", target.location)
        assert code == 1
        assert "replay" in out
        assert "s v8" in out
        assert "CompactionRefused" in out

    @on_both
    def test_snapshot_that_disagrees_with_replay(
        self, capsys: pytest.CaptureFixture[str], target: Target, long_db: str
    ) -> None:
        """A snapshot whose hash no longer matches the replayed state is reported."""
        ((version,),) = target.rows("SELECT version FROM snapshots")
        target.tamper("UPDATE snapshots SET sha256 = 'forged'")
        code, out, _ = run(capsys, "verify", str(long_db), "--json")
        assert code == 1
        assert [(f["check"], f["version"]) for f in json.loads(out)] == [("snapshot", version)]

    @on_both
    def test_deleted_tail_is_caught_by_the_snapshot(
        self, capsys: pytest.CaptureFixture[str], target: Target, long_db: str
    ) -> None:
        """Rows deleted from the end leave a valid chain; the snapshot ahead of it is reported."""
        ((version,),) = target.rows("SELECT version FROM snapshots")
        target.tamper(f"DELETE FROM events WHERE version >= {version - 5}")
        code, out, _ = run(capsys, "verify", str(long_db), "--json")
        assert code == 1
        assert [(f["check"], f["version"]) for f in json.loads(out)] == [("snapshot", version - 5)]

    @on_both
    def test_tampered_spill_file(
        self, capsys: pytest.CaptureFixture[str], target: Target, demo_db: str
    ) -> None:
        """A spill whose stored bytes no longer match its sha256 fails verify."""
        handle = target.rows("SELECT handle FROM spills ORDER BY handle")[0][0]
        data = target.spill(handle)
        assert data is not None
        target.set_spill(handle, data.replace(b"/etc", b"/tmp"))
        code, out, _ = run(capsys, "verify", str(demo_db))
        assert code == 1
        assert out.startswith("spill")
        assert "does not match its recorded sha256" in out


class TestVerifyClean:
    def test_orphans_are_noted_exit_0_and_cleaned(
        self, capsys: pytest.CaptureFixture[str], demo_db: str
    ) -> None:
        """An orphan spill file is a note (exit 0, fatal false); --clean removes it and
        nothing else."""
        root = Path(f"{demo_db}.spills")
        kept = sorted(root.rglob("*.spill"))
        crashed = f"ee/ee{'1' * 62}.spill.tmp"  # a content-addressed write cut short
        (root / "ee").mkdir()
        (root / crashed).write_bytes(b"half a spill")
        code, out, _ = run(capsys, "verify", str(demo_db), "--json")
        assert code == 0
        assert [(f["check"], f["fatal"]) for f in json.loads(out)] == [("orphan", False)]
        code, out, _ = run(capsys, "verify", str(demo_db), "--clean")
        assert code == 0
        assert f"removed {crashed}" in out
        assert sorted(root.rglob("*")) == sorted({*kept, *(p.parent for p in kept)})
        assert run(capsys, "verify", str(demo_db))[1].startswith("ok:")

    def test_clean_does_not_hide_real_findings(
        self, capsys: pytest.CaptureFixture[str], demo_db: str
    ) -> None:
        """A damaged spill still exits 1 with --clean, and its file is not removed."""
        spill = next(Path(f"{demo_db}.spills").glob("*/*.spill"))
        spill.write_bytes(spill.read_bytes()[:-1])
        code, out, _ = run(capsys, "verify", str(demo_db), "--clean")
        assert code == 1
        assert "spill" in out
        assert spill.exists()


class TestAudit:
    @on_both
    def test_demo_has_findings(self, capsys: pytest.CaptureFixture[str], demo_db: str) -> None:
        """audit reports refusals, invalidations, raw fallbacks and the evicted constraint."""
        code, out, _ = run(capsys, "audit", str(demo_db), "--json")
        report = json.loads(out)
        assert code == 1
        assert report["totals"] == {
            "compaction_refusals": 2,
            "marker_refusals": 1,
            "marker_invalidations": 1,
            "raw_fallbacks": 2,
            "evicted_obligations": 2,
            "notes": 0,
        }
        evicted = report["sessions"]["incident-2-evicted-constraint"]["evicted_obligations"]
        assert evicted == [
            {
                "kind": "constraint",
                "key": "no-etc-writes",
                "position": 900,
                "carried_by": [],
                "retold_at": None,
            }
        ]

    @on_both
    def test_a_replaced_view_hides_nothing(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, target: Target
    ) -> None:
        """audit reads tierlog's own SQL, not the stored views: a view replaced to show
        no rows does not hide the refusals."""
        target.tamper("DROP VIEW compaction_refusals")
        target.tamper("CREATE VIEW compaction_refusals AS SELECT * FROM events WHERE 1 = 0")
        code, out, _ = run(capsys, "audit", str(demo_db), "--json")
        assert (code, json.loads(out)["totals"]["compaction_refusals"]) == (1, 2)

    @on_both
    def test_clean_session_has_none(self, capsys: pytest.CaptureFixture[str], long_db: str) -> None:
        """A session with truncations but nothing refused or evicted audits clean."""
        code, out, _ = run(capsys, "audit", str(long_db))
        assert code == 0
        assert "total:" in out


class TestSql:
    @pytest.mark.parametrize(
        "sql",
        [
            "INSERT INTO snapshots VALUES ('x', 1, 'y', x'00')",
            "UPDATE events SET type = 'x'",
            "DROP VIEW turns",
            "ATTACH 'evil.db' AS evil",
            "PRAGMA query_only = 0",
        ],
    )
    @on_both
    def test_cannot_modify(
        self,
        capsys: pytest.CaptureFixture[str],
        target: Target,
        tmp_path: Path,
        demo_db: str,
        sql: str,
    ) -> None:
        """Writes fail with a clear message, exit 2, and change nothing on disk."""
        before = target.rows(), target.rows("SELECT * FROM snapshots"), sorted(tmp_path.iterdir())
        code, _, err = run(capsys, "sql", str(demo_db), sql)
        assert code == 2
        assert "read-only" in err
        after = target.rows(), target.rows("SELECT * FROM snapshots"), sorted(tmp_path.iterdir())
        assert after == before

    @on_both
    def test_select_on_views(self, capsys: pytest.CaptureFixture[str], demo_db: str) -> None:
        """The audit views answer plain SELECTs."""
        query = "SELECT rules FROM compaction_refusals ORDER BY rules"
        code, out, _ = run(capsys, "sql", str(demo_db), query, "--json")
        assert code == 0
        assert json.loads(out) == [{"rules": "C1,C5"}, {"rules": "C5"}]

    def test_json_table_functions_read_payloads(
        self, capsys: pytest.CaptureFixture[str], demo_db: str
    ) -> None:
        """json_each and json_tree, the way into a payload's arrays, answer (their first
        use asks the authorizer for what a write would, and query_only still holds)."""
        query = (
            "SELECT count(*) AS n FROM events, json_each(events.payload) j"
            " WHERE events.type = 'CompactionRefused' AND j.key = 'violations'"
        )
        code, out, err = run(capsys, "sql", demo_db, query, "--json")
        assert (code, json.loads(out) if out else err) == (0, [{"n": 2}])
        query = "SELECT count(*) AS n FROM json_tree('{\"a\": [1, 2]}')"
        code, out, err = run(capsys, "sql", demo_db, query, "--json")
        assert (code, json.loads(out) if out else err) == (0, [{"n": 4}])


class TestTransfer:
    @on_both
    def test_export_import_reproduces_every_state(
        self,
        capsys: pytest.CaptureFixture[str],
        demo_db: str,
        second_target: Target,
        tmp_path: Path,
    ) -> None:
        """Every demo session exported and imported into a fresh database has the same sha256."""
        fresh = second_target.location
        with eventstore.open(demo_db) as journal:
            ids = journal.sessions()
            expected = {sid: journal.session(sid).state.sha256 for sid in ids}
        for sid in ids:
            dump = tmp_path / f"{sid}.jsonl"
            assert run(capsys, "export", str(demo_db), sid, "-o", str(dump))[0] == 0
            assert run(capsys, "import", str(fresh), str(dump))[0] == 0
        with eventstore.open(fresh) as journal:
            assert {sid: journal.session(sid).state.sha256 for sid in ids} == expected
        assert run(capsys, "verify", str(fresh))[0] == 0

    @on_both
    def test_import_is_idempotent(
        self,
        capsys: pytest.CaptureFixture[str],
        demo_db: str,
        second_target: Target,
        tmp_path: Path,
    ) -> None:
        """Importing the same file twice changes nothing the second time."""
        dump, fresh = tmp_path / "x.jsonl", second_target.location
        run(capsys, "export", str(demo_db), "incident-1-depth-change", "-o", str(dump))
        run(capsys, "import", fresh, str(dump))
        before = second_target.rows()
        code, out, _ = run(capsys, "import", fresh, str(dump))
        assert (code, "unchanged" in out, second_target.rows()) == (0, True, before)

    def test_unsafe_history_imports_as_refusal(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, tmp_path: Path
    ) -> None:
        """A Compacted edited to leave a seam hole is re-decided as CompactionRefused."""
        _, out, _ = run(capsys, "export", str(demo_db), "incident-1-depth-change")
        lines = [json.loads(line) for line in out.splitlines()]
        first = next(row for row in lines if row["type"] == "Compacted")
        first["payload"]["covers_hi"] = 5
        dump = tmp_path / "edited.jsonl"
        dump.write_text(_by_hand(lines))
        target = tmp_path / "x.db"
        code, _, err = run(capsys, "import", str(target), str(dump), "--session", "copy")
        assert (code, target.exists()) == (1, False)
        assert "session 'incident-1-depth-change' does not verify: replay v" in err
        assert "--allow-findings" in err
        code, out, _ = run(
            capsys, "import", str(target), str(dump), "--session", "copy", "--allow-findings"
        )
        assert code == 0
        assert "decided differently" in out
        assert "carried finding (recorded as a note): replay v" in out
        assert "skipped (impossible after re-decision): v18 MarkerEmitted" in out
        with eventstore.open(tmp_path / "x.db") as journal:
            types = [type(e).__name__ for e in journal.session("copy").events()]
        assert "CompactionRefused" in types
        assert "MarkerInvalidated" not in types
        assert types[-1] == "Noted"  # audit lists the findings the import carried
        assert run(capsys, "audit", str(target), "copy")[0] == 1

    @on_both
    def test_inconsistent_history_aborts_whole(
        self,
        capsys: pytest.CaptureFixture[str],
        demo_db: str,
        second_target: Target,
        tmp_path: Path,
    ) -> None:
        """A marker on a node the file never created aborts the import; nothing is written."""
        _, out, _ = run(capsys, "export", str(demo_db), "incident-1-depth-change")
        lines = [json.loads(line) for line in out.splitlines()]
        marker = next(row for row in lines if row["type"] == "MarkerEmitted")
        marker["payload"]["node_id"] = "n99"
        dump = tmp_path / "edited.jsonl"
        dump.write_text(_by_hand(lines))
        code, _, err = run(capsys, "import", second_target.location, str(dump))
        assert code == 2
        assert "v18" in err
        assert "unknown node 'n99'" in err
        if isinstance(second_target, SqliteTarget):  # nothing created
            assert not Path(second_target.location).exists()
        else:
            assert second_target.rows("SELECT count(*) FROM events") == [(0,)]

    @pytest.mark.parametrize(
        "line",
        [
            '{"session_id": "s", "version": 1, "type": "Nope", "payload": {}}',
            '{"session_id": "s", "version": 1, "type": "Checkpointed", "payload": {"at": 0},'
            ' "schema_version": "1"}',
            '{"session_id": "s", "version": 2, "type": "Checkpointed", "payload": {"at": 0}}',
            '{"session_id": "../s", "version": 1, "type": "Checkpointed", "payload": {"at": 0}}',
            "[1, 2]",
            "{not json",
        ],
    )
    def test_malformed_import_writes_nothing(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, line: str
    ) -> None:
        """A file with a bad line is refused whole, exit 2, and no journal file is left."""
        dump = tmp_path / "bad.jsonl"
        dump.write_text(line + "\n")
        code, _, err = run(capsys, "import", str(tmp_path / "x.db"), str(dump))
        assert code == 2
        assert "line 1" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


class TestDemo:
    def test_demo_narrates_refusals(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """The demo shows each refusal with its rule, and the SQL to look at it."""
        code, out, _ = run(capsys, "demo", "--db", str(tmp_path / "d.db"))
        assert code == 0
        for needle in (
            "M2 negative_fact_dropped",
            "MarkerInvalidated",
            "C1 unit_mismatch",
            "C5 obligation_evicted",
            "tierlog sql",
        ):
            assert needle in out

    @on_both
    def test_demo_refuses_to_replace_a_real_journal(
        self, capsys: pytest.CaptureFixture[str], target: Target
    ) -> None:
        """--db pointing at a journal with other sessions is left alone (exit 2)."""
        with target.open() as journal:
            new_session(journal, "precious")
        code, _, err = run(capsys, "demo", "--db", target.location)
        assert code == 2
        assert "precious" in err
        assert target.rows("SELECT DISTINCT session_id FROM events") == [("precious",)]

    def test_json_logs_on_stderr(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """--log-format json -v makes the refusals JSON log lines on standard error."""
        code, _, err = run(
            capsys, "--log-format", "json", "-v", "demo", "--db", str(tmp_path / "d.db")
        )
        lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
        assert code == 0
        assert any(line["event"] == "refused" and line["level"] == "warning" for line in lines)


def _corrupt(db: str) -> None:
    """Overwrite the cell pointers of the events table's root page (WAL checkpointed first)."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events'").fetchone()
    (size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    with open(db, "r+b") as f:
        f.seek(size * (root - 1) + 8)
        f.write(b"\xff" * 400)


def _line(**payload: object) -> bytes:
    row = {"session_id": "s", "version": 1, "type": "TurnAppended", "payload": payload}
    return json.dumps(row).encode() + b"\n"


class TestNoTraceback:
    @pytest.mark.parametrize(
        ("content", "message"),
        [
            (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
            (b'{"session_id": "s\xff"}\n', "not UTF-8"),
            (_line(index=0, role="user", content="\ud800", tokens=1), "lone surrogate"),
            (_line(index=0, role="user", content="x", tokens=2**64), "does not fit in 64 bits"),
            (b'{"session_id": "s", "session_id": "t"}\n', "duplicate key"),
            (
                b'{"session_id": "s", "version": true, "type": "Checkpointed", "payload": {}}\n',
                "True",
            ),
            (b"", "nothing to import"),
            (b"\n   \n", "nothing to import"),
        ],
    )
    def test_bad_import_files_exit_2_and_leave_no_file(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, message: str
    ) -> None:
        """Each hostile file: exit 2, one line on stderr, and no journal file created."""
        dump = tmp_path / "bad.jsonl"
        dump.write_bytes(content)
        code, _, err = run(capsys, "import", str(tmp_path / "x.db"), str(dump))
        assert (code, err.count("\n"), "Traceback" in err) == (2, 1, False)
        assert message in err
        assert not list(tmp_path.glob("*x.db*"))

    def test_empty_session_rename_is_refused(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, tmp_path: Path
    ) -> None:
        """--session '' is an error, not the same as leaving it out."""
        dump = tmp_path / "d.jsonl"
        run(capsys, "export", str(demo_db), "incident-1-depth-change", "-o", str(dump))
        code, _, err = run(capsys, "import", str(tmp_path / "x.db"), str(dump), "--session", "")
        assert (code, "session id ''" in err) == (2, True)
        assert not list(tmp_path.glob("*x.db*"))

    @pytest.mark.parametrize(
        "argv",
        [
            ["log", "DB", "incident-1-depth-change", "--from", str(2**70)],
            ["log", "DB", "incident-1-depth-change", "--to", "-1"],
            ["state", "DB", "incident-1-depth-change", "--at", str(2**64)],
            ["diff", "DB", "incident-1-depth-change", "1", "9" * 5000],
        ],
    )
    def test_huge_versions_are_usage_errors(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, argv: list[str]
    ) -> None:
        """A version beyond 2**62 (or below 0) is a usage error, exit 2."""
        code, _, err = run(capsys, *[str(demo_db) if a == "DB" else a for a in argv])
        assert (code, "outside 0..2**62" in err or "not a version" in err) == (2, True)
        assert "Traceback" not in err

    @pytest.mark.parametrize("command", ["verify", "audit"])
    def test_a_corrupt_page_is_a_finding(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, command: str
    ) -> None:
        """verify and audit report a malformed page as a finding: exit 1, no traceback."""
        _corrupt(demo_db)
        code, out, err = run(capsys, command, str(demo_db))
        assert code == 1
        assert "database is corrupt" in out + err
        assert "Traceback" not in err

    def test_verify_json_names_the_corruption(
        self, capsys: pytest.CaptureFixture[str], demo_db: str
    ) -> None:
        """verify --json lists integrity findings, PRAGMA integrity_check's among them."""
        _corrupt(demo_db)
        code, out, _ = run(capsys, "verify", str(demo_db), "--json")
        findings = json.loads(out)
        assert code == 1
        assert {f["check"] for f in findings} == {"integrity"}
        assert findings[-1]["problem"].startswith("database is corrupt")

    @pytest.mark.parametrize("command", ["sessions", "head", "log", "state"])
    def test_a_corrupt_page_elsewhere_is_exit_2(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, command: str
    ) -> None:
        """Other commands say the database is corrupt in one line, exit 2."""
        _corrupt(demo_db)
        argv = [command, str(demo_db)] + (
            ["incident-1-depth-change"] if command in "logstate" else []
        )
        code, _, err = run(capsys, *argv)
        assert (code, err.count("\n"), "database is corrupt" in err) == (2, 1, True)

    def test_a_bug_is_exit_3_and_one_line(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An unexpected exception is an internal error: exit 3, one line; -vv adds the trace."""

        def broken(*_: object) -> str:
            raise ZeroDivisionError("boom")

        monkeypatch.setattr("eventstore.cli._output.describe_state", broken)
        code, _, err = run(capsys, "state", str(demo_db), "incident-1-depth-change")
        assert (code, err.count("\n")) == (3, 1)
        assert "internal error: ZeroDivisionError: boom" in err
        code, _, err = run(capsys, "-vv", "state", str(demo_db), "incident-1-depth-change")
        assert (code, "Traceback" in err) == (3, True)

    def test_ctrl_c_during_import_leaves_nothing(
        self,
        capsys: pytest.CaptureFixture[str],
        demo_db: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Ctrl-C while an import decides: exit 2 'interrupted', no journal, no scratch folder."""
        dump = tmp_path / "d.jsonl"
        run(capsys, "export", str(demo_db), "incident-2-evicted-constraint", "-o", str(dump))

        def interrupt(*_: object) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr("eventstore.cli._output.Progress.__call__", interrupt)
        code, _, err = run(capsys, "import", str(tmp_path / "x.db"), str(dump))
        assert (code, err.strip()) == (2, "tierlog import: error: interrupted")
        assert not list(tmp_path.glob("*x.db*"))


ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"
LIMITS = ("--max-memory", "32", "--timeout", "30")
NO_TIMEOUT = ("--timeout", "0")


def _cpu_seconds(pid: int) -> float:
    """The user and system CPU time process ``pid`` has used (Linux's /proc)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    utime, stime = stat.rsplit(")", 1)[1].split()[11:13]
    return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")


def _until_busy(child: subprocess.Popen[str], cpu: float) -> None:
    """Return once ``child`` has used ``cpu`` more seconds of CPU; fail if it ends first
    or after 60 s."""
    goal, deadline = _cpu_seconds(child.pid) + cpu, time.monotonic() + 60
    while _cpu_seconds(child.pid) < goal:
        assert child.poll() is None, "the child ended before its query ran"
        assert time.monotonic() < deadline, "the query never ran"
        time.sleep(0.01)


class TestSqlLimits:
    def test_an_endless_query_stops_at_the_timeout(
        self, capsys: pytest.CaptureFixture[str], demo_db: str
    ) -> None:
        """An endless recursive CTE stops after --timeout: exit 2 with a message."""
        code, _, err = run(
            capsys, "sql", str(demo_db), f"{ENDLESS} SELECT max(x) FROM c", "--timeout", "0.3"
        )
        assert (code, "stopped after 0.3 s" in err) == (2, True)

    def test_rows_stream_until_the_timeout(
        self, capsys: pytest.CaptureFixture[str], demo_db: str
    ) -> None:
        """An endless row-returning query prints as it goes and stops at the timeout."""
        code, out, err = run(
            capsys, "sql", str(demo_db), f"{ENDLESS} SELECT x FROM c", "--timeout", "0.3"
        )
        assert (code, "stopped after 0.3 s" in err) == (2, True)
        assert out.splitlines()[2].strip() == "1"

    @pytest.mark.slow
    @pytest.mark.parametrize(
        "query",
        [
            "SELECT length(randomblob(400000000))",
            f"{ENDLESS} SELECT length(group_concat(hex(randomblob(1000)))) FROM c",
        ],
    )
    def test_a_memory_hungry_query_stops(self, demo_db: str, query: str) -> None:
        """SQLite's memory limit stops a query that grows one value: exit 2, at once.

        In a child process: the heap limit is process-wide and can only be lowered.
        """
        child = subprocess.run(
            [sys.executable, "-m", "eventstore", "sql", str(demo_db), query, *LIMITS],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.returncode == 2
        assert child.stderr.strip() == (
            "tierlog sql: error: query stopped: it needs more than its memory limit of 32 MB"
        )

    def test_json_rows_stream_as_a_valid_array(
        self, capsys: pytest.CaptureFixture[str], demo_db: str
    ) -> None:
        """--json prints one row a line that together parse as one JSON array."""
        code, out, _ = run(
            capsys, "sql", str(demo_db), f"{ENDLESS} SELECT x FROM c LIMIT 3", "--json"
        )
        assert (code, json.loads(out)) == (0, [{"x": 1}, {"x": 2}, {"x": 3}])
        assert json.loads(run(capsys, "sql", str(demo_db), "SELECT 1 WHERE 0", "--json")[1]) == []

    @pytest.mark.slow
    @pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
    def test_ctrl_c_stops_the_query(self, demo_db: str) -> None:
        """SIGINT while an endless query runs with no timeout: exit 2, 'interrupted'.

        The signal is sent once the child, after logging (-vv) that it starts the query,
        has spent a fifth of a second of CPU time: by then it is inside SQLite's loop.
        """
        query = f"{ENDLESS} SELECT max(x) FROM c"
        argv = ["tierlog", "-vv", "sql", str(demo_db), query, *NO_TIMEOUT]
        # As at a terminal: Ctrl-C raises KeyboardInterrupt even when this test runs as
        # a background job, whose children inherit SIGINT ignored.
        start = (
            "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler);"
            f" sys.argv = {argv!r}; runpy.run_module('eventstore', run_name='__main__')"
        )
        child = subprocess.Popen(
            [sys.executable, "-c", start],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stderr is not None
        for line in child.stderr:  # ends at EOF if the child dies first
            if "query" in line:
                break
        _until_busy(child, 0.2)
        child.send_signal(signal.SIGINT)
        try:
            _, err = child.communicate(timeout=10)
        finally:
            child.kill()  # never leave an endless query running, pass or fail
            child.wait()
        assert (child.returncode, err.strip()) == (2, "tierlog sql: error: interrupted")


class TestWitness:
    def _witness(self, capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path) -> Path:
        code, out, _ = run(capsys, "head", db, "--json")
        assert code == 0
        path = tmp_path / "witness.json"
        path.write_text(out)
        return path

    @on_both
    def test_head_prints_each_session(
        self, capsys: pytest.CaptureFixture[str], target: Target, demo_db: str
    ) -> None:
        """head lists each session's last version and hash, as text and as JSON."""
        _, out, _ = run(capsys, "head", demo_db, "--json")
        by_id = {h["session_id"]: h for h in json.loads(out)}
        assert by_id["incident-1-depth-change"]["version"] == 22
        assert target.rows(
            "SELECT hash FROM events WHERE session_id = 'incident-1-depth-change' AND version = 22"
        ) == [(by_id["incident-1-depth-change"]["hash"],)]
        _, text, _ = run(capsys, "head", demo_db, "incident-1-depth-change")
        assert text.split() == [
            "incident-1-depth-change",
            "22",
            by_id["incident-1-depth-change"]["hash"],
        ]

    @on_both
    def test_an_intact_and_a_grown_journal_pass(
        self, capsys: pytest.CaptureFixture[str], long_db: str, tmp_path: Path
    ) -> None:
        """Events appended after the witness was taken do not fail it."""
        witness = self._witness(capsys, long_db, tmp_path)
        with eventstore.open(long_db) as journal:
            fill(journal.session("long"), 3)
        assert run(capsys, "verify", long_db, "--witness", str(witness))[0] == 0

    @on_both
    def test_a_deleted_tail_is_found(
        self, capsys: pytest.CaptureFixture[str], target: Target, demo_db: str, tmp_path: Path
    ) -> None:
        """Deleting a session's newest events (a valid, shorter chain) fails the witness."""
        witness = self._witness(capsys, demo_db, tmp_path)
        target.tamper(
            "DELETE FROM events WHERE session_id = 'incident-1-depth-change' AND version > 21"
        )
        assert run(capsys, "verify", demo_db)[0] == 0  # the chain alone cannot tell
        code, out, _ = run(capsys, "verify", demo_db, "--witness", str(witness), "--json")
        (finding,) = json.loads(out)
        assert code == 1
        assert (finding["check"], finding["session_id"], finding["version"]) == (
            "witness",
            "incident-1-depth-change",
            22,
        )
        assert "ends at version 21" in finding["problem"]

    @on_both
    def test_a_deleted_session_is_found(
        self, capsys: pytest.CaptureFixture[str], target: Target, demo_db: str, tmp_path: Path
    ) -> None:
        """A session deleted whole is named, with or without the SESSION argument."""
        witness = self._witness(capsys, demo_db, tmp_path)
        target.tamper("DELETE FROM events WHERE session_id = 'incident-1-dropped-rejection'")
        for extra in ([], ["incident-1-dropped-rejection"]):
            code, out, _ = run(capsys, "verify", demo_db, *extra, "--witness", str(witness))
            assert code == 1
            assert "incident-1-dropped-rejection" in out
            assert "session is missing" in out

    def test_a_different_head_is_found(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, tmp_path: Path
    ) -> None:
        """A witnessed hash that the journal no longer holds (history rewritten) is named."""
        witness = self._witness(capsys, demo_db, tmp_path)
        heads = json.loads(witness.read_text())
        heads[0]["hash"] = "0" * 64
        witness.write_text(json.dumps(heads))
        code, out, _ = run(capsys, "verify", demo_db, "--witness", str(witness))
        assert code == 1
        assert f"{heads[0]['session_id']} v{heads[0]['version']}" in out
        assert "not the witnessed one" in out

    @pytest.mark.parametrize(
        "content", ["not json", "{}", '[{"session_id": "s", "version": "1", "hash": "x"}]']
    )
    def test_a_malformed_witness_is_bad_input(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, tmp_path: Path, content: str
    ) -> None:
        """A witness file that `tierlog head --json` did not write: exit 2, one line."""
        witness = tmp_path / "w.json"
        witness.write_text(content)
        code, _, err = run(capsys, "verify", str(demo_db), "--witness", str(witness))
        assert (code, err.count("\n")) == (2, 1)


class TestOnlyRegularFiles:
    @pytest.mark.parametrize("command", ["import", "witness"])
    def test_a_device_or_folder_is_bad_input(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, tmp_path: Path, command: str
    ) -> None:
        """/dev/zero or a folder given as a file is refused at once (exit 2), never read
        until memory runs out."""
        for source in ("/dev/zero", str(tmp_path)):
            if command == "import":
                argv = ["import", str(tmp_path / "new.db"), source]
            else:
                argv = ["verify", demo_db, "--witness", source]
            code, _, err = run(capsys, *argv)
            assert code == 2
            assert "not a regular file" in err or "Is a directory" in err
        assert not (tmp_path / "new.db").exists()


class TestImportChecksTheChain:
    def test_an_edited_line_that_keeps_its_hash_is_refused(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, tmp_path: Path
    ) -> None:
        """An exported line edited behind the chain's back is a finding (exit 1, its line
        named), not re-hashed; nothing is written."""
        _, out, _ = run(capsys, "export", str(demo_db), "incident-1-depth-change")
        lines = out.splitlines()
        row = json.loads(lines[1])
        row["payload"]["content"] = "Feel free to rewrite /etc/shadow."
        lines[1] = json.dumps(row)
        dump = tmp_path / "edited.jsonl"
        dump.write_text("\n".join(lines) + "\n")
        code, _, err = run(capsys, "import", str(tmp_path / "x.db"), str(dump))
        assert code == 1
        assert "does not verify: chain: line 2 (v2): its hash does not match" in err
        assert not (tmp_path / "x.db").exists()

    def test_a_session_mixing_hashed_and_bare_lines_is_refused(
        self, capsys: pytest.CaptureFixture[str], demo_db: str, tmp_path: Path
    ) -> None:
        """Dropping the hash from one line of an export does not get it past the check."""
        _, out, _ = run(capsys, "export", str(demo_db), "incident-1-depth-change")
        rows = [json.loads(line) for line in out.splitlines()]
        del rows[3]["hash"], rows[3]["recorded_at"]
        dump = tmp_path / "mixed.jsonl"
        dump.write_text("".join(json.dumps(r) + "\n" for r in rows))
        code, _, err = run(capsys, "import", str(tmp_path / "x.db"), str(dump))
        assert code == 2
        assert "line 4: some lines of this session carry hash" in err


class TestReadersReportBreaks:
    @on_both
    @pytest.mark.parametrize(
        "argv",
        [["log", "DB", "s"], ["state", "DB", "s", "--at", "6"], ["diff", "DB", "s", "1", "6"]],
        ids=["log", "state --at", "diff"],
    )
    def test_a_reader_that_walks_a_break_exits_1(
        self, capsys: pytest.CaptureFixture[str], target: Target, argv: list[str]
    ) -> None:
        """log shows every row and names the break; state and diff name it; each exits 1."""
        with target.open() as journal:
            fill(new_session(journal), 6)
        behind(target, [("UPDATE events SET recorded_at = ? WHERE version = ?", ("x", 4))])
        code, out, err = run(capsys, *[target.location if a == "DB" else a for a in argv])
        assert code == 1
        assert "does not verify: its hash chain breaks at v4" in err
        if argv[0] == "log":
            assert len(out.splitlines()) == 7  # every row, the bad one included

    def test_state_of_a_session_without_a_snapshot_exits_1(
        self, capsys: pytest.CaptureFixture[str], db_path: Path
    ) -> None:
        """state reads every row when no snapshot stands for them: a break is exit 1."""
        with eventstore.open(db_path, snapshot_every=0) as journal:
            fill(new_session(journal), 6)
        behind(SqliteTarget(db_path), [("UPDATE events SET payload = ? WHERE version = ?",
                                        ('{"at":0}', 3))])  # fmt: skip
        code, out, err = run(capsys, "state", str(db_path), "s")
        assert (code, out) == (1, "")
        assert "breaks at v3" in err


class TestNothingCreatedOnBadArguments:
    @pytest.mark.parametrize(
        "extra",
        [["--session", "ghost"], ["--chunk", "0"], ["--chunk", "99999999999"], ["--chunk", "x"]],
    )
    def test_ship_validates_before_it_creates_dest(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: list[str]
    ) -> None:
        """A bad --session or --chunk exits 2 and DEST is not created."""
        src, dest = tmp_path / "src.db", tmp_path / "dest.db"
        with eventstore.open(src) as journal:
            fill(new_session(journal), 2)
        code, _, err = run(capsys, "ship", str(src), str(dest), *extra)
        assert code == 2
        assert err
        assert not dest.exists()

    @pytest.mark.parametrize("command", ["sessions", "import", "ship", "verify", "sql"])
    def test_a_url_of_another_scheme_is_refused_with_its_secret_hidden(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:  # fmt: skip
        """mysql:// and friends are exit 2, named without their password, nothing created."""
        monkeypatch.chdir(tmp_path)
        url = "postgresql+psycopg://admin:hunter2@db/fleet"
        rest = {"import": ["x.jsonl"], "ship": [str(tmp_path / "d.db")], "sql": ["SELECT 1"]}
        code, out, err = run(capsys, command, url, *rest.get(command, []))
        assert code == 2
        assert "hunter2" not in out + err
        assert "admin:***@db" in err
        assert list(tmp_path.iterdir()) == []


class TestTrailer:
    def test_a_cut_export_is_refused(
        self, capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path
    ) -> None:
        """An export cut at a line boundary has no trailer: import exits 2 naming the
        last line, creates nothing, and says how a 0.2 file is read."""
        with eventstore.open(db_path) as journal:
            fill(new_session(journal), 9)
        dump = tmp_path / "s.jsonl"
        assert run(capsys, "export", str(db_path), "s", "-o", str(dump))[0] == 0
        lines = dump.read_text().splitlines(keepends=True)
        assert json.loads(lines[-1]) == {
            "end_of_session": "s", "events": 10, "hash": json.loads(lines[-2])["hash"],
        }  # fmt: skip
        dump.write_text("".join(lines[:6]))
        code, _, err = run(capsys, "import", str(tmp_path / "x.db"), str(dump))
        assert code == 2
        assert "no trailer after its last line (line 6)" in err
        assert "--no-trailer" in err
        assert not (tmp_path / "x.db").exists()

    def test_a_file_without_trailer_imports_with_no_trailer_and_says_so(
        self, capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path
    ) -> None:
        """A 0.2 export (no trailer) imports with --no-trailer, and the output says what
        that cannot tell."""
        with eventstore.open(db_path) as journal:
            fill(new_session(journal), 3)
        dump = tmp_path / "s.jsonl"
        run(capsys, "export", str(db_path), "s", "-o", str(dump))
        dump.write_text("".join(dump.read_text().splitlines(keepends=True)[:-1]))
        code, out, _ = run(capsys, "import", str(tmp_path / "x.db"), str(dump), "--no-trailer")
        assert code == 0
        assert "read without a trailer (--no-trailer)" in out
        query = "SELECT kind FROM ingest_notes"  # the journal says so too, and audit shows it
        code, out, _ = run(capsys, "sql", str(tmp_path / "x.db"), query, "--json")
        assert json.loads(out) == [{"kind": "read_without_trailer"}]
        assert "read without a trailer" in run(capsys, "audit", str(tmp_path / "x.db"))[1]

    @pytest.mark.parametrize(
        ("edit", "message"),
        [
            (lambda t: {**t, "events": 3}, "the trailer counts 3 events, the file holds 4"),
            (lambda t: {**t, "hash": "0" * 64}, "the trailer's head hash is not the last line's"),
            (lambda t: {**t, "extra": 1}, "a trailer has"),
        ],
    )
    def test_a_trailer_that_does_not_match_is_refused(
        self, capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path,
        edit: Any, message: str,
    ) -> None:  # fmt: skip
        """A trailer counting other lines or naming another head is an edited file."""
        with eventstore.open(db_path) as journal:
            fill(new_session(journal), 3)
        dump = tmp_path / "s.jsonl"
        run(capsys, "export", str(db_path), "s", "-o", str(dump))
        *lines, trailer = dump.read_text().splitlines()
        dump.write_text("\n".join([*lines, json.dumps(edit(json.loads(trailer)))]) + "\n")
        code, _, err = run(capsys, "import", str(tmp_path / "x.db"), str(dump))
        assert (code, message in err) == (2, True)


class TestCleanNeverFollowsASymlink:
    def test_a_symlinked_spill_root_is_not_cleaned(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """With the spill root a symlink to another folder, --clean removes nothing there."""
        db = tmp_path / "agent.db"
        with eventstore.open(db) as journal:
            fill(new_session(journal), 2)
        elsewhere = tmp_path / "elsewhere"
        (elsewhere / "ee").mkdir(parents=True)
        victim = elsewhere / "ee" / f"ee{'1' * 62}.spill"
        victim.write_bytes(b"someone else's file")
        Path(f"{db}.spills").symlink_to(elsewhere)
        code, _, err = run(capsys, "verify", str(db), "--clean")
        assert code == 2
        assert "is a symlink: nothing is removed through it" in err
        assert victim.read_bytes() == b"someone else's file"


class TestSqlCaps:
    @on_both
    @pytest.mark.parametrize(
        ("caps", "said"),
        [(["--max-rows", "5"], "stopped after 5 rows (--max-rows)"),
         (["--max-bytes", "0.0001"], "(--max-bytes)")],
    )  # fmt: skip
    def test_a_cap_stops_the_rows_with_a_message(
        self, capsys: pytest.CaptureFixture[str], target: Target, caps: list[str], said: str
    ) -> None:
        """At a cap the rows stop (the JSON array closed), exit 2, and stderr says why."""
        sql = "SELECT 1 AS n, 'x' AS pad FROM events, events AS e2"
        with target.open() as journal:
            fill(new_session(journal), 10)
        code, out, err = run(capsys, "sql", target.location, sql, "--json", *caps)
        assert code == 2
        assert said in err
        rows = json.loads(out)
        assert 0 < len(rows) <= 5
