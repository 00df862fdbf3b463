"""``verify --jobs N``: sessions verified in worker processes give the same findings, in
the same order, as one process; the CLI takes the option and refuses a bad count."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import signal
from collections.abc import Iterable
from pathlib import Path

import pytest

import eventstore
from eventstore._journal import Journal
from eventstore._ops import Reopen, WorkerDied, _audit
from eventstore._ops._audit import verify, verify_session
from eventstore._ops._jobs import verify_in_workers
from eventstore.cli import main
from tests.helpers import behind_its_back, fill, new_session

SESSIONS = ("a", "b", "c", "d", "e")


@pytest.fixture(name="db")
def _db(tmp_path: Path) -> Path:
    """A journal of five sessions; b's and d's payloads edited behind tierlog's back."""
    path = tmp_path / "j.db"
    with eventstore.open(path) as journal:
        for sid in SESSIONS:
            fill(new_session(journal, sid), 6)
    with behind_its_back(path) as conn:
        for sid, version in (("b", 3), ("d", 5)):
            conn.execute(
                "UPDATE events SET payload = json_set(payload, '$.content', 'forged')"
                " WHERE session_id = ? AND version = ?",
                (sid, version),
            )
    return path


def _killed_at_c(journal: Journal, session_id: str) -> Iterable[object]:
    """``verify_session``, in a worker killed with SIGKILL when it reaches session c."""
    if session_id == "c":
        os.kill(os.getpid(), signal.SIGKILL)
    return verify_session(journal, session_id)


class TestVerifyInWorkers:
    def test_findings_are_the_same_and_in_the_same_order(self, db: Path) -> None:
        """Two and three workers find what one process finds, session by session."""
        with eventstore.open(db, readonly=True) as journal:
            alone = verify(journal)
            assert [(f.session_id, f.version) for f in alone] == [("b", 3), ("d", 5)]
            for jobs in (2, 3):
                assert verify(journal, jobs=jobs, reopen=Reopen(str(db))) == alone

    def test_progress_names_each_session_in_order(self, db: Path) -> None:
        """The progress callback sees every session once, in the order asked."""
        seen: list[str] = []
        with eventstore.open(db, readonly=True) as journal:
            verify(journal, ["e", "a", "c"], seen.append, jobs=2, reopen=Reopen(str(db)))
        assert seen == ["e", "a", "c"]

    def test_the_integrity_check_comes_first(self, db: Path) -> None:
        """A file-wide problem (a row below version 1) leads the findings, as alone."""
        with behind_its_back(db) as conn:
            conn.execute("UPDATE events SET version = 0 WHERE session_id = 'e' AND version = 6")
        with eventstore.open(db, readonly=True) as journal:
            alone = verify(journal)
            assert alone[0].check == "integrity"
            assert verify(journal, jobs=2, reopen=Reopen(str(db))) == alone

    def test_the_integrity_check_runs_here_while_the_workers_verify(self, db: Path) -> None:
        """The parent runs the file's integrity check itself, after the sessions are
        handed to the workers, and hands its problems on first."""
        asked: list[int] = []

        def integrity() -> list[str]:
            asked.append(os.getpid())
            return ["a problem"]

        problems, sessions = verify_in_workers(
            Reopen(str(db)), verify_session, ["a", "b"], 2, integrity
        )
        assert (problems, asked) == (["a problem"], [os.getpid()])
        assert [(sid, len(list(found))) for sid, found in sessions] == [("a", 0), ("b", 1)]

    def test_a_failing_integrity_check_stops_the_workers(self, db: Path) -> None:
        """An error in the parent's integrity check is raised, and no worker is left."""

        def integrity() -> list[str]:
            raise RuntimeError("the file went away")

        with pytest.raises(RuntimeError, match="went away"):
            verify_in_workers(Reopen(str(db)), verify_session, ["a", "b"], 2, integrity)
        assert multiprocessing.active_children() == []

    def test_a_worker_killed_is_said_plainly(self, db: Path) -> None:
        """A worker killed mid-verify (SIGKILL, the OOM killer) is a ``WorkerDied`` that
        names where the findings stop, and no worker is left running."""
        _, sessions = verify_in_workers(
            Reopen(str(db)), _killed_at_c, list(SESSIONS), 2, lambda: []
        )
        with pytest.raises(WorkerDied, match=r"a worker process died \(killed, or out of"):
            list(sessions)
        assert multiprocessing.active_children() == []

    def test_without_a_way_to_reopen_it_runs_alone(self, db: Path) -> None:
        """jobs > 1 with no ``reopen`` verifies in this process (nothing to hand on)."""
        with eventstore.open(db, readonly=True) as journal:
            assert verify(journal, jobs=4) == verify(journal)

    def test_the_opener_pickles(self, db: Path) -> None:
        """``Reopen`` crosses to a spawned process: it pickles and opens read-only."""
        opener = pickle.loads(pickle.dumps(Reopen(str(db))))
        with opener() as journal:
            assert journal.sessions() == list(SESSIONS)
            assert journal.recorder.readonly


class TestCli:
    def test_jobs_prints_what_one_process_prints(
        self, db: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``--jobs 2`` exits and prints as ``--jobs 1`` does, findings in order."""
        outputs = []
        for jobs in ("1", "2"):
            code = main(["verify", str(db), "--json", "--jobs", jobs])
            outputs.append((code, capsys.readouterr().out))
        assert outputs[0] == outputs[1]
        assert [f["session_id"] for f in json.loads(outputs[0][1])] == ["b", "d"]

    def test_a_worker_killed_is_an_error_not_a_bug(
        self, db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``verify --jobs 2`` whose worker is killed: exit 2 and one line saying so
        (it read "internal error: BrokenProcessPool ... (a bug)")."""
        monkeypatch.setattr(_audit, "verify_session", _killed_at_c)
        assert main(["verify", str(db), "--jobs", "2"]) == 2
        err = capsys.readouterr().err
        assert "error: a worker process died (killed, or out of memory)" in err
        assert "bug" not in err

    @pytest.mark.parametrize("jobs", ["0", "-1", "two", "257"])
    def test_a_bad_count_is_refused(
        self, db: Path, jobs: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A count that is no number from 1 to 256 is bad input: exit 2, named."""
        assert main(["verify", str(db), "--jobs", jobs]) == 2
        assert "--jobs takes a number from 1 to 256" in capsys.readouterr().err
