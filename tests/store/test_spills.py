"""Spill storage: portable handles, linear growth, checked reads, nothing left behind."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import eventstore
import reducers
from eventstore._files import render_turns
from eventstore._ops._audit import clean_spills, orphan_spills, verify
from eventstore._ops._transfer import export_lines, import_file
from eventstore._postgres._spills import TableSpills
from eventstore._sqlite._recorder import SqliteRecorder
from eventstore._store import SPILL_DEPTH, FolderSpills, _spills
from eventstore._store._spills import Ref
from tests.helpers import config, fill, refuse, refusing_session, rows
from tests.targets import Target, on_both

ROOT = Path(__file__).resolve().parents[2]
LEGACY = ROOT / "tests" / "data" / "journal-0.1"


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


def _stored_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


class TestHandles:
    def test_handle_is_relative_and_content_addressed(self, journal: eventstore.Journal) -> None:
        """A handle is <sha[:2]>/<sha>.spill: it names neither the database nor the session."""
        spill = refuse(refusing_session(journal, "mig-42"))
        assert spill.handle == f"{spill.sha256[:2]}/{spill.sha256}.spill"
        assert reducers.handle_problem(spill.handle) is None
        assert "agent.db" not in spill.handle
        assert "mig-42" not in spill.handle

    def test_same_history_same_state_anywhere(self, tmp_path: Path) -> None:
        """Two journals of other names, sessions of other ids: equal handles and sha256."""
        states = []
        for name, sid in (("a.db", "one"), ("elsewhere/b.db", "two")):
            (tmp_path / name).parent.mkdir(exist_ok=True)
            with eventstore.open(tmp_path / name) as journal:
                s = refusing_session(journal, sid)
                refuse(s)
                fill(s, 2)
                refuse(s)
                states.append(s.state)
        assert [sp.handle for sp in states[0].spills] == [sp.handle for sp in states[1].spills]
        assert states[0].sha256 == states[1].sha256

    def test_export_import_elsewhere_keeps_every_sha256(
        self, tmp_path: Path, journal: eventstore.Journal
    ) -> None:
        """Exported, imported into a file of another name under another id, re-imported:
        every state sha256 is the source's, and the second import changes nothing."""
        s = refusing_session(journal, "src")
        refuse(s)
        fill(s, 3)
        refuse(s)
        exported = tmp_path / "src.jsonl"
        exported.write_text("".join(line + "\n" for line in export_lines(journal, "src")))
        with eventstore.open(tmp_path / "other-name.db") as other:
            for _ in range(2):
                with exported.open() as f:
                    (done,) = import_file(other, f, rename="copy")
            assert (done.unchanged, done.redecided) == (True, 0)
            copy = other.session("copy")
            for v in range(s.version + 1):
                assert copy.state_at(v).sha256 == s.state_at(v).sha256
            assert [copy.read_spill(sp) for sp in copy.state.spills] == [
                s.read_spill(sp) for sp in s.state.spills
            ]

    def test_renamed_journal_verifies(self, tmp_path: Path) -> None:
        """A journal moved with its spill folder to another name and folder verifies clean."""
        with eventstore.open(tmp_path / "a.db") as journal:
            refuse(refusing_session(journal))
        (tmp_path / "moved").mkdir()
        (tmp_path / "a.db").rename(tmp_path / "moved" / "b.db")
        (tmp_path / "a.db.spills").rename(tmp_path / "moved" / "b.db.spills")
        with eventstore.open(tmp_path / "moved" / "b.db", readonly=True) as journal:
            assert verify(journal) == []


@pytest.fixture(name="legacy")
def _legacy(tmp_path: Path) -> Path:
    for item in LEGACY.iterdir():
        if item.name.startswith("journal-0.1.db"):
            copy = shutil.copytree if item.is_dir() else shutil.copy
            copy(item, tmp_path / item.name)
    return tmp_path / "journal-0.1.db"


class TestLegacy:
    """tests/data/journal-0.1: written by tierlog 0.1, handles '<db>.spills/<session>/...'."""

    EXPECTED = json.loads((LEGACY / "expected.json").read_text())

    def _check(self, db: Path) -> None:
        with eventstore.open(db) as journal:
            assert verify(journal) == []
            assert journal.sessions() == sorted(self.EXPECTED)
            for sid, expected in self.EXPECTED.items():
                s = journal.session(sid)
                cold = reducers.fold(s.events())
                assert (cold.version, cold.sha256) == (expected["version"], expected["sha256"])
                assert s.state.sha256 == expected["sha256"]
                for spill in s.state.spills:
                    assert spill.handle.startswith("journal-0.1.db.spills/")
                    assert len(s.read_spill(spill)) == spill.bytes

    def test_verifies_replays_and_reads_its_spills(self, legacy: Path) -> None:
        """A 0.1 journal verifies, replays to its recorded sha256 and reads back every spill."""
        self._check(legacy)

    def test_also_after_renaming(self, legacy: Path) -> None:
        """Renamed (with its spill folder), the 0.1 handles still resolve in the new root."""
        renamed = legacy.with_name("renamed.db")
        legacy.rename(renamed)
        legacy.with_name("journal-0.1.db.spills").rename(renamed.with_name("renamed.db.spills"))
        self._check(renamed)

    def test_keeps_working(self, legacy: Path) -> None:
        """A 0.1 journal takes new refusals (new handles beside the old) and still verifies."""
        with eventstore.open(legacy) as journal:
            s = journal.session("legacy-turns")
            s.append_turn("user", "more", 3)
            end = s.state.end
            with pytest.raises(eventstore.UnrecoverableCompactionError):  # drops 'no-etc'
                s.compact(
                    tier=2,
                    input=(0, end),
                    covers=(0, end),
                    tail_start=end,
                    summary="x",
                    tokens=1,
                    replaces=list(s.state.nodes),
                )
            spill = s.state.spills[-1]
            assert not spill.handle.startswith("journal-0.1")
            assert s.read_spill(spill).startswith(s.read_spill(s.state.spills[0]))
            assert verify(journal) == []


class TestLinearStorage:
    def test_refusals_store_each_turn_once(self, journal: eventstore.Journal) -> None:
        """Where no files merge, each full-transcript refusal stores only the turns since
        the last one plus one header line: storage is the transcript once plus N headers
        (0.1 stored N copies)."""
        _bound(journal, SPILL_DEPTH, fanout=1_000)
        s = refusing_session(journal)
        stored, headers = [], 0
        for _ in range(40):
            fill(s, 3)
            spill = refuse(s)
            with (Path(journal.spills.location) / spill.handle).open("rb") as f:
                headers += len(f.readline())
            stored.append(_stored_bytes(Path(journal.spills.location)))
        assert stored[-1] == s.state.spills[-1].bytes + headers
        growth = [b - a for a, b in itertools.pairwise(stored)]
        assert max(growth) <= 3 * 64 + 512  # three short turns and a header, at any N
        assert sum(sp.bytes for sp in s.state.spills) > 8 * stored[-1]  # the 0.1 cost

    def test_every_spill_still_reads_back_whole(self, journal: eventstore.Journal) -> None:
        """Each chained spill reassembles to exactly its recorded bytes."""
        s = refusing_session(journal)
        for _ in range(5):
            fill(s, 2)
            refuse(s)
        datas = [s.read_spill(sp) for sp in s.state.spills]
        assert [len(d) for d in datas] == [sp.bytes for sp in s.state.spills]
        assert all(a == b[: len(a)] for a, b in itertools.pairwise(datas))

    def test_same_bytes_are_not_written_twice(self, journal: eventstore.Journal) -> None:
        """Refusing twice with no new turn records the same handle and writes nothing new."""
        s = refusing_session(journal)
        first = refuse(s)
        before = _files(Path(journal.spills.location))
        assert refuse(s).handle == first.handle
        assert _files(Path(journal.spills.location)) == before


class TestCheckedReads:
    @pytest.mark.parametrize("handle", ["../../../../etc/hostname", "/dev/zero", "a/../../b", ""])
    def test_bad_handle_is_invalid_on_append(self, handle: str) -> None:
        """A Spilled event whose handle is not canonical and relative cannot even be built."""
        with pytest.raises(reducers.InvalidEvent, match="handle"):
            reducers.Spilled(lo=0, hi=1, handle=handle, sha256="0" * 64, bytes=1)

    def test_stored_escaping_handle_fails_verify(self, db_path: Path) -> None:
        """A forged Spilled row with '../' fails to decode: verify names it, reads nothing."""
        with eventstore.open(db_path) as journal:
            s = refusing_session(journal)
            version = s.version
        forged = '{"bytes":5,"handle":"../../../../etc/hostname","hi":1,"lo":0,"sha256":"%s"}'
        store = SqliteRecorder(db_path)
        row = ("r", version + 1, "Spilled", 1, forged % ("0" * 64), "t")
        _insert_raw(store, row)
        with eventstore.open(db_path, readonly=True) as journal:
            found = verify(journal)
        assert [(f.check, f.version) for f in found] == [("chain", version + 1)]
        assert "handle" in found[0].problem

    @pytest.mark.parametrize("outside", ["/etc/hostname", "/dev/zero"])
    def test_symlink_out_of_the_root_is_refused(
        self, journal: eventstore.Journal, outside: str
    ) -> None:
        """A spill file replaced by a symlink leading out of the root is not followed."""
        s = refusing_session(journal)
        spill = refuse(s)
        path = Path(journal.spills.location) / spill.handle
        path.unlink()
        path.symlink_to(outside)
        assert "out of the spill root" in (s.effects.spill_problem(spill) or "")
        with pytest.raises(eventstore.IntegrityError, match="out of the spill root"):
            s.read_spill(spill)

    def test_fifo_is_not_opened_for_reading(self, journal: eventstore.Journal) -> None:
        """A FIFO in place of a spill file is refused without blocking."""
        s = refusing_session(journal)
        spill = refuse(s)
        path = Path(journal.spills.location) / spill.handle
        path.unlink()
        os.mkfifo(path)
        assert "not a regular file" in (s.effects.spill_problem(spill) or "")

    def test_reads_stop_after_the_recorded_size(
        self, journal: eventstore.Journal, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A huge file in place of a spill is read no further than its size plus one byte
        (and its header)."""
        s = refusing_session(journal)
        spill = refuse(s)
        path = Path(journal.spills.location) / spill.handle
        with path.open("ab") as f:
            f.truncate(1 << 30)  # sparse: 1 GiB
        read = []
        real_read = os.read

        def counting(fd: int, n: int) -> bytes:
            data = real_read(fd, n)
            read.append(len(data))
            return data

        monkeypatch.setattr(os, "read", counting)
        assert "bytes" in (s.effects.spill_problem(spill) or "")
        assert sum(read) <= spill.bytes + 1 + 4096

    def test_broken_base_shows_and_heals(self, journal: eventstore.Journal) -> None:
        """A missing base breaks the spills built on it (verify says so); the next refusal
        writes a fresh, readable spill instead of building on it."""
        s = refusing_session(journal)
        first = refuse(s)
        fill(s, 2)
        second = refuse(s)
        (Path(journal.spills.location) / first.handle).unlink()
        assert first.handle.split("/")[1][:12] in (s.effects.spill_problem(second) or "")
        fill(s, 2)
        third = refuse(s)
        assert s.effects.spill_problem(third) is None

    def test_header_naming_itself_is_no_loop(self, journal: eventstore.Journal) -> None:
        """A spill whose header names itself (or a longer base) as its base is a problem."""
        s = refusing_session(journal)
        spill = refuse(s)
        path = Path(journal.spills.location) / spill.handle
        header = {"base": {"bytes": spill.bytes, "handle": spill.handle, "sha256": spill.sha256}}
        path.write_bytes(json.dumps({**header, "format": "tierlog-spill/1"}).encode() + b"\n")
        assert "base" in (s.effects.spill_problem(spill) or "")


class TestRefusalCost:
    """A refusal that spills the transcript again costs what it adds, not the log."""

    def test_only_the_new_turns_are_read(
        self, journal: eventstore.Journal, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """After a first refusal, the next reads back only the turns appended since."""
        s = refusing_session(journal)
        refuse(s)
        read: list[str] = []
        real = journal.recorder.turn_payloads

        def counting(session_id: str, first: int, last: int) -> Iterator[str]:
            for payload in real(session_id, first, last):
                read.append(payload)
                yield payload

        monkeypatch.setattr(journal.recorder, "turn_payloads", counting)
        fill(s, 30)
        refuse(s)
        fill(s, 3)
        refuse(s)
        assert len(read) == 33

    def test_each_spill_is_the_whole_transcript(self, journal: eventstore.Journal) -> None:
        """Spills written on the last one hold exactly the rendering of every turn."""
        s = refusing_session(journal)
        for n in range(6):
            fill(s, n)
            spill = refuse(s)
            whole = journal.effects("r").turns(s.state, [(0, s.state.turns)])
            assert s.read_spill(spill) == render_turns(whole)
        assert verify(journal) == []

    def test_another_spill_in_between_is_no_base(self, journal: eventstore.Journal) -> None:
        """When the newest spill is not the last refusal's, the refusal renders it all."""
        s = refusing_session(journal)
        refuse(s)
        fill(s, 2)
        s.spill(2, 4)
        fill(s, 2)
        spill = refuse(s)
        whole = journal.effects("r").turns(s.state, [(0, s.state.turns)])
        assert s.read_spill(spill) == render_turns(whole)

    def test_a_base_changed_in_place_is_not_built_on(self, journal: eventstore.Journal) -> None:
        """A file deep in the chain changed since it was written (its size and mtime put
        back) is noticed: the next refusal writes a spill that reads back whole."""
        s = refusing_session(journal)
        first = refuse(s)
        for _ in range(3):
            fill(s, 2)
            refuse(s)
        path = Path(journal.spills.location) / first.handle
        data, st = path.read_bytes(), path.stat()
        path.write_bytes(data[:-2] + (b"X" if data[-2:-1] != b"X" else b"Y") + data[-1:])
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        fill(s, 2)
        assert s.effects.spill_problem(refuse(s)) is None


def _depth(journal: eventstore.Journal, spill: eventstore.Spill) -> int:
    """The files (SQLite) or rows (PostgreSQL) of a spill's chain, its own included."""
    store = journal.spills
    if isinstance(store, FolderSpills):
        check = store.checker()
        assert check(spill) is None
        return check.depth(Ref.of(spill))
    assert isinstance(store, TableSpills)
    return len(store._assemble(spill.handle))


def _bound(journal: eventstore.Journal, depth: int, fanout: int | None = None) -> None:
    """Let the journal's spill chains grow ``depth`` deep at most (and, on SQLite, merge
    ``fanout - 1`` files of one span)."""
    assert isinstance(journal.spills, (FolderSpills, TableSpills))
    journal.spills.max_depth = depth
    if fanout is not None:
        assert isinstance(journal.spills, FolderSpills)
        journal.spills.fanout = fanout


def _refusals(s: eventstore.Session, n: int) -> list[eventstore.Spill]:
    """``n`` refusals, two turns apart: the spills they wrote."""
    spills = []
    for _ in range(n):
        fill(s, 2)
        spills.append(refuse(s))
    return spills


def _tamper(path: Path) -> None:
    """Change one byte of a file in place, its size and mtime put back."""
    data, st = path.read_bytes(), path.stat()
    path.write_bytes(data[:-2] + (b"X" if data[-2:-1] != b"X" else b"Y") + data[-1:])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@on_both
class TestBoundedChains:
    """A spill chain is at most ``max_depth`` deep: a deeper spill is written whole."""

    def test_depth_stays_bounded_over_many_refusals(self, journal: eventstore.Journal) -> None:
        """Over many refusals every chain is at most three deep, and each spill still
        reads back as the whole transcript it recorded."""
        _bound(journal, 3)
        s = refusing_session(journal)
        spills = _refusals(s, 14)
        assert [_depth(journal, sp) for sp in spills] == [1, 2, 3] * 4 + [1, 2]
        datas = [s.read_spill(sp) for sp in spills]
        assert all(a == b[: len(a)] for a, b in itertools.pairwise(datas))
        whole = journal.effects("r").turns(s.state, [(0, s.state.turns)])
        assert datas[-1] == render_turns(whole)
        assert verify(journal) == []

    def test_a_whole_spill_reads_as_its_chain_did(
        self, target: Target, second_target: Target
    ) -> None:
        """The same history with chains of 64 and of 2: the same events, state sha256
        and bytes, whichever way the spills are stored."""
        runs = []
        for location, depth in ((target.location, SPILL_DEPTH), (second_target.location, 2)):
            with eventstore.open(location) as journal:
                _bound(journal, depth)
                s = refusing_session(journal)
                spills = _refusals(s, 7)
                runs.append((spills, s.state.sha256, [s.read_spill(sp) for sp in spills]))
                assert max(_depth(journal, sp) for sp in spills) == min(depth, 7)
        assert runs[0] == runs[1]

    def test_a_deep_chain_written_before_reads_verifies_and_is_not_extended(
        self, journal: eventstore.Journal
    ) -> None:
        """A chain written deeper than the bound (an older journal) still reads back and
        verifies; the next refusal after reopening writes its spill whole."""
        _bound(journal, 1_000)
        s = refusing_session(journal)
        spills = _refusals(s, 8)
        assert _depth(journal, spills[-1]) == 8
        _bound(journal, 3)
        assert verify(journal) == []
        assert all(len(s.read_spill(sp)) == sp.bytes for sp in spills)
        fill(s, 2)
        fresh = journal.session("r")  # as after reopening: nothing known of the chain
        assert _depth(journal, refuse(fresh)) == 1
        assert _depth(journal, refuse(refusing_session(journal, "other"))) == 1

    def test_import_bounds_the_chains_it_writes(
        self, journal: eventstore.Journal, second_target: Target, tmp_path: Path
    ) -> None:
        """A session whose chain is eight deep, imported into a journal bounded at three:
        the same handles and bytes, every chain at most three deep, verify clean."""
        _bound(journal, 1_000)
        s = refusing_session(journal, "src")
        spills = _refusals(s, 8)
        exported = tmp_path / "src.jsonl"
        exported.write_text("".join(line + "\n" for line in export_lines(journal, "src")))
        with eventstore.open(second_target.location) as other, exported.open() as f:
            _bound(other, 3)
            import_file(other, f)
            copy = other.session("src")
            assert copy.state.spills == s.state.spills
            assert [copy.read_spill(sp) for sp in spills] == [s.read_spill(sp) for sp in spills]
            assert max(_depth(other, sp) for sp in spills) <= 3
            assert verify(other) == []


class TestMergedChains:
    """Files of one span merge, as digits carry in a count: chains about log(spills)
    deep, each byte stored about as many times."""

    def test_chains_count_in_base_two(self, journal: eventstore.Journal) -> None:
        """Merging in twos, the n-th spill after the first is 1 + popcount(n) files deep,
        and every spill reads back as the transcript it recorded."""
        _bound(journal, SPILL_DEPTH, fanout=2)
        s = refusing_session(journal)
        spills = _refusals(s, 20)
        assert [_depth(journal, sp) for sp in spills] == [1] + [
            1 + bin(n).count("1") for n in range(1, 20)
        ]
        datas = [s.read_spill(sp) for sp in spills]
        assert all(a == b[: len(a)] for a, b in itertools.pairwise(datas))
        assert datas[-1] == render_turns(journal.effects("r").turns(s.state, [(0, s.state.turns)]))
        assert verify(journal) == []

    def test_storage_is_a_few_copies(self, journal: eventstore.Journal) -> None:
        """Merging in fours over 64 refusals: no chain deeper than 1 + 3 * 3 files, and
        the folder holds at most 1 + log4(64) copies of the transcript (0.1: 32)."""
        _bound(journal, SPILL_DEPTH, fanout=4)
        s = refusing_session(journal)
        spills = _refusals(s, 64)
        assert max(_depth(journal, sp) for sp in spills) <= 10
        stored = _stored_bytes(Path(journal.spills.location))
        assert stored <= 4 * spills[-1].bytes + 64 * 512  # and a header a file
        assert sum(sp.bytes for sp in spills) > 30 * spills[-1].bytes

    def test_a_reopened_journal_builds_on_what_it_reads(self, db_path: Path) -> None:
        """After reopening, a spill is written on the chain read back, and merging goes
        on above it; every spill reads back and verifies."""
        for _ in range(2):
            with eventstore.open(db_path) as journal:
                _bound(journal, SPILL_DEPTH, fanout=2)
                s = journal.session("r") if journal.has_session("r") else refusing_session(journal)
                depths = [_depth(journal, sp) for sp in _refusals(s, 6)]
                assert depths[1:] == [depths[0] + bin(n).count("1") for n in range(1, 6)]
        assert depths[0] == 4  # on the first run's newest spill, three deep
        with eventstore.open(db_path) as journal:
            assert verify(journal) == []


class TestBoundedChainsChecked:
    """Bounded chains keep every check: a changed file is not built on, and verify
    names it."""

    @pytest.mark.parametrize("fanout", [2, 1_000])
    @pytest.mark.parametrize("changed", range(6))
    def test_a_file_changed_anywhere_is_caught(
        self, journal: eventstore.Journal, changed: int, fanout: int
    ) -> None:
        """Chains of three at most, files merged in twos or never: whichever file changes
        in place, the next spill reads back whole, and verify reports the changed one."""
        _bound(journal, 3, fanout)
        s = refusing_session(journal)
        spills = _refusals(s, 6)
        _tamper(Path(journal.spills.location) / spills[changed].handle)
        fill(s, 2)
        new = refuse(s)
        assert s.effects.spill_problem(new) is None
        assert s.read_spill(new) == render_turns(
            journal.effects("r").turns(s.state, [(0, s.state.turns)])
        )
        assert s.effects.spill_problem(spills[changed]) is not None
        found = verify(journal)
        assert {f.check for f in found} == {"spill"}
        assert any(spills[changed].handle in f.problem for f in found)

    @pytest.mark.parametrize(("fanout", "depth", "n"), [(1_000, 3, 3), (2, 64, 4)])
    def test_a_changed_file_is_not_copied_even_when_stat_misses_it(
        self,
        journal: eventstore.Journal,
        monkeypatch: pytest.MonkeyPatch,
        fanout: int,
        depth: int,
        n: int,
    ) -> None:
        """The newest file, which the next spill copies (whole: three deep already;
        merged in twos: the fourth spill), is checked against its sha256 as it is read:
        changed where ``stat`` cannot tell, it is not copied, and the spill is written
        from the log instead."""
        _bound(journal, depth, fanout)
        s = refusing_session(journal)
        spills = _refusals(s, n)
        monkeypatch.setattr(_spills, "_sig", lambda path: None)  # stat sees no change
        assert isinstance(journal.spills, FolderSpills)
        for known in journal.spills._known.values():
            object.__setattr__(known, "sig", None)
        _tamper(Path(journal.spills.location) / spills[-1].handle)
        fill(s, 2)
        new = refuse(s)
        assert s.effects.spill_problem(new) is None
        assert s.read_spill(new) == render_turns(
            journal.effects("r").turns(s.state, [(0, s.state.turns)])
        )


def _insert_raw(store: SqliteRecorder, row: tuple[str, int, str, int, str, str]) -> None:
    """Append a row with a correct chain link, bypassing every check (a forger's write)."""
    from eventstore._store._chain import chain_hash

    sid, version, type_name, schema, payload, at = row
    prev = store.head(sid)[1]
    digest = chain_hash(prev, sid, version, type_name, schema, payload, at)
    store.conn.execute(
        "INSERT INTO events (session_id, version, type, schema_version, payload, recorded_at,"
        " prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (sid, version, type_name, schema, payload, at, prev, digest),
    )


class TestNothingLeftBehind:
    def test_unwritable_spill_is_a_journal_error(self, db_path: Path) -> None:
        """Under RLIMIT_FSIZE the refusal's spill cannot be written: JournalError naming the
        cause, no event committed, no file (.tmp included) or folder left."""
        with eventstore.open(db_path) as journal:
            s = refusing_session(journal, turns=2)
            for i in range(40):
                s.append_turn("tool", f"{i} " + "x" * 4000, 10)
            version = s.version
        store = SqliteRecorder(db_path)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.close()
        out = subprocess.run(
            [sys.executable, "-m", "tests.writers", "fsize", str(db_path), "r", str(64 * 1024)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out.startswith("JournalError: cannot write spill")
        assert "File too large" in out
        assert rows(db_path, "SELECT max(version) FROM events") == [(version,)]
        assert not db_path.with_name("agent.db.spills").exists()

    def test_full_database_is_a_journal_error(self, journal: eventstore.Journal) -> None:
        """With the database full, a refusal raises JournalError naming it, commits nothing
        and takes its spill file back."""
        s = refusing_session(journal)
        for _i in range(30):
            s.append_turn("tool", "y" * 3000, 10)
        before = (s.version, _files(Path(journal.spills.location)))
        assert isinstance(journal.recorder, SqliteRecorder)
        conn = journal.recorder.conn  # the limit is per connection
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(eventstore.JournalError, match="full") as err:
            refuse(s)
        assert not isinstance(err.value, eventstore.UnrecoverableCompactionError)
        assert (s.version, _files(Path(journal.spills.location))) == before
        conn.execute(f"PRAGMA max_page_count = {pages * 10}")
        refuse(s)  # and the journal goes on
        assert s.effects.spill_problem(s.state.spills[-1]) is None

    def test_orphans_are_noted_and_cleaned(self, journal: eventstore.Journal) -> None:
        """A spill written but never committed (a crash) is noted, not fatal; --clean
        removes it and only it."""
        s = refusing_session(journal)
        kept = refuse(s)
        fill(s, 2)
        refuse(s)
        fill(s, 2)
        orphan = s.effects.write_spill(s.state, 0, s.state.end)  # written, never recorded
        root = Path(journal.spills.location)
        (root / "ab").mkdir()
        (root / "ab" / f"ab{'0' * 62}.spill.tmp").write_bytes(b"half")
        foreign = [root / "README.txt", root / "zz" / "thesis.txt"]
        foreign[1].parent.mkdir()
        for path in foreign:
            path.write_text("not tierlog's")
        notes = orphan_spills(journal)
        assert [n.fatal for n in notes] == [False, False]
        assert orphan.handle in notes[1].problem
        assert [f.fatal for f in verify(journal)] == [False, False]
        assert len(clean_spills(journal)) == 2
        assert orphan_spills(journal) == []
        assert not (root / "ab").exists()
        assert all(path.read_text() == "not tierlog's" for path in foreign)  # left alone
        assert s.read_spill(kept)
        assert [f for f in verify(journal) if f.fatal] == []


class TestNoSnapshots:
    def test_snapshot_every_0_never_trusts_one(self, db_path: Path) -> None:
        """With snapshot_every=0 a reopen replays the log, even over a snapshot that
        (forged, with a matching sha256) says something else."""
        with eventstore.open(db_path, snapshot_every=2) as journal:
            s = journal.start_session("s", config())
            fill(s, 5)
            s.state_constraint("no-etc", "never modify /etc")
            fill(s, 2)
            assert journal.recorder.load_snapshot("s") is not None
        with eventstore.open(db_path, snapshot_every=0) as journal:
            journal.snapshots.check = None  # type: ignore[method-assign, assignment]  # never consulted
            assert "no-etc" in journal.session("s").state.constraints
