"""The hooks' worker: what is at risk, where a compaction ends, its runs and its failures."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import eventstore
from eventstore._ops._audit import audit
from eventstore._retell import HEADER
from eventstore.claude_code import _worker
from eventstore.claude_code._hook import MAX_CHARS, Folder, wait_idle
from eventstore.claude_code._hook import main as hook_main
from eventstore.claude_code._worker import (
    HOOKS_SESSION,
    at_risk,
    compaction_end,
    states_all_owed,
)
from reducers import Noted
from tests.transcripts import Script

RULE = "Never modify files under /etc."


def _session(rule: str = RULE) -> Script:
    """A rule, a failed push, a read that succeeded after failing once."""
    s = Script()
    s.user(f"Fix the parser. {rule}")
    s.assistant(s.tool_use("t1", "Bash", command="git push"), prompt=2_000, output=20)
    s.result("t1", "Exit code 128\nfatal: no upstream", error=True)
    s.assistant(s.tool_use("t2", "Bash", command="make check"), prompt=2_100)
    s.result("t2", "Exit code 2\nmake: *** [check] Error 1", error=True)
    s.assistant(s.tool_use("t3", "Bash", command="make check"), prompt=2_200)
    s.result("t3", "all good")
    return s


def _retell_attachment(s: Script, text: str, hook: str = "SessionStart") -> None:
    attachment = {"type": "hook_additional_context", "content": [text], "hookEvent": hook}
    s.entry("attachment", attachment=attachment)


@pytest.fixture(name="journal")
def _journal(tmp_path: Path) -> Iterator[eventstore.Journal]:
    logging.getLogger("tierlog").setLevel(logging.ERROR)
    with eventstore.open(tmp_path / "journal.db") as journal:
        yield journal


def _ingested(journal: eventstore.Journal, tmp_path: Path, s: Script) -> eventstore.Session:
    path = s.write(tmp_path / "t.jsonl")
    return journal.session(eventstore.ingest(journal, path).session_id)


class TestAtRisk:
    def test_before_any_compaction_every_live_obligation_is_at_risk(
        self, journal: eventstore.Journal, tmp_path: Path
    ) -> None:
        """The rule and the failed push are held by raw turns only: both are at risk; the
        failed check a later run resolved is not."""
        s = _ingested(journal, tmp_path, _session())
        assert s.owed() == ()
        risky = at_risk(s.state)
        assert [o.kind for o in risky] == ["constraint", "negative_fact"]
        assert RULE in risky[0].key
        assert "git push" in risky[1].key

    def test_what_a_summary_carries_is_not_at_risk(
        self, journal: eventstore.Journal, tmp_path: Path
    ) -> None:
        """After a compaction whose summary states the rule, only the push is at risk."""
        script = _session()
        script.boundary(2_300, "The user said never modify files under /etc.")
        s = _ingested(journal, tmp_path, script)
        assert [o.kind for o in at_risk(s.state)] == ["negative_fact"]

    def test_what_a_re_tell_states_is_not_at_risk(
        self, journal: eventstore.Journal, tmp_path: Path
    ) -> None:
        """A compaction drops both, a re-tell gives both back: nothing is at risk now."""
        script = _session()
        script.boundary(2_300, "Worked on the parser.")
        s = _ingested(journal, tmp_path, script)
        _retell_attachment(script, _worker.block_of(s, at_risk(s.state)))
        script.assistant(script.text("Carrying on."), prompt=900)
        s = _ingested(journal, tmp_path, script)
        assert s.owed() == ()
        assert at_risk(s.state) == []

    def test_the_block_is_what_retell_writes_for_the_same_obligations(
        self, journal: eventstore.Journal, tmp_path: Path
    ) -> None:
        """After a compaction that drops both, the journal's re-tell is the block, line for
        line: so a block given at SessionStart is recorded as that re-tell."""
        script = _session()
        s = _ingested(journal, tmp_path, script)
        block = _worker.block_of(s, at_risk(s.state))
        script.boundary(2_300, "Worked on the parser.")
        s = _ingested(journal, tmp_path, script)
        due = s.retell(dry_run=True)
        assert due is not None
        assert due.content == block
        assert states_all_owed(s, block)
        header, _first, second = block.split("\n")
        assert not states_all_owed(s, f"{header}\n{second}")


def _lines(*entries: Mapping[str, object]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in entries)


BOUNDARY = {"type": "system", "subtype": "compact_boundary", "uuid": "b"}
SUMMARY = {"type": "user", "isCompactSummary": True, "uuid": "s"}
REPLY = {"type": "assistant", "uuid": "r"}
OTHER = {"type": "attachment", "uuid": "a"}


class TestCompactionEnd:
    def test_the_cut_is_right_after_the_summary(self) -> None:
        """Boundary, attachments, summary, then a reply being written: cut after the summary."""
        head = _lines(REPLY, OTHER)
        data = head + _lines(BOUNDARY, OTHER, SUMMARY) + _lines(REPLY)[:-5]
        assert compaction_end(data, len(head)) == len(head + _lines(BOUNDARY, OTHER, SUMMARY))

    def test_a_summary_not_written_yet_is_waited_for(self) -> None:
        """A boundary alone, or a summary line cut off: not yet."""
        assert compaction_end(_lines(BOUNDARY, OTHER), 0) is None
        assert compaction_end(_lines(BOUNDARY) + _lines(SUMMARY)[:-1], 0) is None

    def test_a_boundary_already_ingested_does_not_count(self) -> None:
        """Only a boundary past ``after`` (what the last ingest read) is the new one."""
        data = _lines(BOUNDARY, SUMMARY)
        assert compaction_end(data, len(data)) is None

    def test_a_tool_output_quoting_a_boundary_is_not_one(self) -> None:
        """The words compact_boundary inside another entry's text are no boundary."""
        quoted = {"type": "user", "message": {"content": '"compact_boundary"'}, "uuid": "q"}
        assert compaction_end(_lines(quoted, SUMMARY), 0) is None


def _run(event: str, journal: Path, transcript: Path, session: str = "s-1") -> str:
    done = subprocess.run(
        [sys.executable, "-I", "-m", "eventstore.claude_code._worker", event, "--journal",
         str(journal), "--session", session, "--transcript", str(transcript), "--print-live",
         "--busy", f"busy-{event}.1"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout


class TestRuns:
    def test_precompact_ingests_and_writes_the_block_for_session_start(
        self, tmp_path: Path
    ) -> None:
        """The worker ingests the transcript, writes the block and prints the live
        obligations for the summarizer."""
        journal = tmp_path / "journal.db"
        printed = _run("precompact", journal, _session().write(tmp_path / "t.jsonl"))
        folder = Folder(str(journal), "s-1")
        block = folder.read("compact")
        assert block is not None
        assert block.startswith(HEADER)
        assert RULE in block
        assert printed.startswith(_worker.SUMMARIZER_HEADER)
        assert folder.read("ingested") == str((tmp_path / "t.jsonl").stat().st_size)
        with eventstore.open(journal) as j:
            assert j.session("s-1").state.turns > 0

    def test_postcompact_queues_what_the_summary_dropped(self, tmp_path: Path) -> None:
        """With no block given at SessionStart, what the summary dropped is queued."""
        journal, path = tmp_path / "journal.db", tmp_path / "t.jsonl"
        script = _session()
        _run("precompact", journal, script.write(path))
        script.boundary(2_300, "Worked on the parser.")
        script.assistant(script.text("Next."), prompt=500)  # the next reply, being written
        _run("postcompact", journal, script.write(path))
        queue = Folder(str(journal), "s-1").read("queue")
        assert queue is not None
        assert RULE in queue
        assert "git push" in queue
        with eventstore.open(journal) as j:  # up to the summary: not the reply after it
            assert j.session("s-1").events()
            assert "Next." not in [getattr(e, "content", "") for e in j.session("s-1").events()]

    def test_a_delivery_the_transcript_does_not_record_is_noted_not_repeated(
        self, tmp_path: Path
    ) -> None:
        """A Claude Code that writes no attachment for the block a prompt was given: the
        next ingest notes it (retell_unrecorded) and queues nothing, so the block is not
        given again at every prompt, nor the transcript ingested again at every turn."""
        journal, path = tmp_path / "journal.db", tmp_path / "t.jsonl"
        script = _session()
        _run("precompact", journal, script.write(path))
        script.boundary(2_300, "Worked on the parser.")
        _run("postcompact", journal, script.write(path))
        prompt = {"session_id": "s-1", "hook_event_name": "UserPromptSubmit"}
        out = io.StringIO()
        hook_main(["--journal", str(journal)], io.StringIO(json.dumps(prompt)), out)
        assert RULE in out.getvalue()
        script.user("Go on.")
        script.assistant(script.text("Done."), prompt=600)
        stop = {**prompt, "hook_event_name": "Stop", "transcript_path": str(script.write(path))}
        hook_main(["--journal", str(journal)], io.StringIO(json.dumps(stop)), io.StringIO())
        assert wait_idle(str(journal), 60)
        assert Folder(str(journal), "s-1").read("queue") is None
        with eventstore.open(journal) as j:
            notes = [e for e in j.session(HOOKS_SESSION).events() if isinstance(e, Noted)]
        assert [n.kind for n in notes] == ["retell_unrecorded"]
        assert str(path) in notes[0].text
        again = io.StringIO()
        hook_main(["--journal", str(journal)], io.StringIO(json.dumps(prompt)), again)
        assert again.getvalue() == ""

    def test_blocks_fit_claude_codes_limit_in_utf_16_units(self, tmp_path: Path) -> None:
        """Rules full of emoji: the block for SessionStart and the queue for the next
        prompt hold whole lines only and at most 10,000 UTF-16 units, so the hook gives
        them as written and Claude Code passes them on whole."""
        journal, path = tmp_path / "journal.db", tmp_path / "t.jsonl"
        script = Script()
        for n in range(120):
            script.user(f"Never touch file {n}. " + "\U0001f6ab" * 60)
            script.assistant(script.text("ok"), prompt=1_000 + n)
        _run("precompact", journal, script.write(path))
        script.boundary(200_000, "Talked.")
        _run("postcompact", journal, script.write(path))
        folder = Folder(str(journal), "s-1")
        for block in (folder.read("compact"), folder.read("queue")):
            assert block is not None
            assert 9_000 < len(block.encode("utf-16-le")) // 2 <= MAX_CHARS
            assert block.splitlines()[-1].endswith('"]')

    def test_an_obligation_too_long_for_any_block_does_not_hide_the_others(
        self, tmp_path: Path
    ) -> None:
        """A rule longer than a block can hold (a pasted paragraph with no full stop) is
        left out of SessionStart's block, and noted (retell_skipped); the other rule and
        the failed push are still given."""
        journal, path = tmp_path / "journal.db", tmp_path / "t.jsonl"
        script = _session(rule="Never modify files under /etc " + "and keep it in mind " * 600)
        script.user("Also: never push to main.")
        _run("precompact", journal, script.write(path))
        block = Folder(str(journal), "s-1").read("compact")
        assert block is not None
        assert "never push to main" in block
        assert "git push" in block
        assert "/etc" not in block
        with eventstore.open(journal) as j:
            notes = [e for e in j.session(HOOKS_SESSION).events() if isinstance(e, Noted)]
        assert [n.kind for n in notes] == ["retell_skipped"]
        assert "heuristic: Never modify files under /etc" in notes[0].text

    def test_two_sessions_work_on_one_journal_at_once(self, tmp_path: Path) -> None:
        """Two workers of two sessions run together; both sessions are ingested."""
        journal = tmp_path / "journal.db"
        procs = []
        for sid in ("s-1", "s-2"):
            path = Script(session_id=sid)
            path.user(f"Start {sid}. {RULE}")
            path.assistant(path.text("ok"), prompt=1_000)
            command = [sys.executable, "-I", "-m", "eventstore.claude_code._worker", "record"]
            command += ["--journal", str(journal), "--session", sid]
            command += ["--transcript", str(path.write(tmp_path / f"{sid}.jsonl"))]
            procs.append(subprocess.Popen(command))
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
        with eventstore.open(journal) as j:
            assert sorted(j.sessions()) == ["s-1", "s-2"]
        assert Folder(str(journal), "s-1").read("error") is None


class TestFailures:
    def test_a_transcript_it_cannot_read_is_an_error_and_a_note(self, tmp_path: Path) -> None:
        """Not a transcript: the worker exits 0, keeps one line for the next hook and notes
        it in the journal's hooks session; the busy file is gone."""
        journal, garbage = tmp_path / "journal.db", tmp_path / "garbage.jsonl"
        garbage.write_bytes(b"\x00\xff\n")
        folder = Folder(str(journal), "s-1")
        folder.make()
        folder.write("busy-precompact.1", "1")
        _run("precompact", journal, garbage)
        error = folder.read("error")
        assert error is not None
        assert error.startswith(f"precompact for session s-1 ({garbage}): InvalidEvent: ")
        assert folder.read("busy-precompact.1") is None
        with eventstore.open(journal) as j:
            notes = list(j.session(HOOKS_SESSION).events())[1:]
            assert j.sessions() == [HOOKS_SESSION]
        assert [type(n) for n in notes] == [Noted]
        assert isinstance(notes[0], Noted)
        assert notes[0].kind == "hook_error"
        assert str(garbage) in notes[0].text

    def test_postcompact_on_a_file_that_is_no_transcript_fails_at_once(
        self, tmp_path: Path
    ) -> None:
        """It does not wait for a compaction that cannot come: the error is kept at once."""
        journal, garbage = tmp_path / "journal.db", tmp_path / "garbage.jsonl"
        garbage.write_bytes(b"\x00\xff\n")
        _run("postcompact", journal, garbage)
        error = Folder(str(journal), "s-1").read("error")
        assert error is not None
        assert "line 1 is not a Claude Code transcript entry" in error

    def test_a_worker_that_died_is_noted_by_the_next(self, tmp_path: Path) -> None:
        """A ``died-`` file (a worker killed before it finished) becomes a hook_error
        note naming the session and the event, and is removed."""
        journal = tmp_path / "journal.db"
        folder = Folder(str(journal), "s-1")
        folder.make()
        folder.write("died-precompact.7", "12345")
        _run("record", journal, _session().write(tmp_path / "t.jsonl"))
        assert folder.read("died-precompact.7") is None
        with eventstore.open(journal) as j:
            notes = [e for e in j.session(HOOKS_SESSION).events() if isinstance(e, Noted)]
        assert [n.kind for n in notes] == ["hook_error"]
        assert "the precompact worker of session s-1 (pid 12345) ended before" in notes[0].text

    @pytest.mark.parametrize("left", ["died-precompact.7", "busy-precompact.7"])
    def test_a_death_an_older_tierlog_left_in_the_hook_folder_is_noted(
        self, tmp_path: Path, left: str
    ) -> None:
        """An upgrade: a worker of the older tierlog (pid files in the hook folder itself,
        not ``running/``) was killed; the next worker still notes its death and removes its
        file (before, it was never noted, and the file stayed for good)."""
        journal = tmp_path / "journal.db"
        folder = Folder(str(journal), "s-1")
        folder.make()
        old = Path(folder.root, f"s-1.{left}")
        old.write_text("999999999")  # no such process
        _run("record", journal, _session().write(tmp_path / "t.jsonl"))
        assert not old.exists()
        with eventstore.open(journal) as j:
            notes = [e for e in j.session(HOOKS_SESSION).events() if isinstance(e, Noted)]
        assert [n.kind for n in notes] == ["hook_error"]
        assert "the precompact worker of session s-1 (pid 999999999) ended before" in notes[0].text

    def test_a_journal_that_cannot_be_opened_leaves_the_error_file(self, tmp_path: Path) -> None:
        """A journal file that is not a database: the error is kept, nothing raised."""
        journal = tmp_path / "journal.db"
        journal.write_bytes(b"not a database" * 100)
        _run("record", journal, _session().write(tmp_path / "t.jsonl"))
        assert Folder(str(journal), "s-1").read("error") is not None
        assert journal.read_bytes() == b"not a database" * 100

    @pytest.mark.parametrize("event", ["precompact", "postcompact", "record"])
    def test_a_transcript_path_that_is_no_file_fails_at_once(
        self, tmp_path: Path, event: str
    ) -> None:
        """A FIFO given as the transcript (or /dev/zero) is refused before it is read: the
        worker neither hangs holding the session's lock nor reads without end."""
        journal, fifo = tmp_path / "journal.db", tmp_path / "t.jsonl"
        os.mkfifo(fifo)
        _run(event, journal, fifo)
        error = Folder(str(journal), "s-1").read("error")
        assert error is not None
        assert f"{fifo}: not a regular file" in error


class TestAPidFolderInTheWay:
    def test_a_file_named_running_does_not_stop_the_hooks_and_is_noted_once(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``<journal>.claude-code/running`` is a regular file (where the workers' pid
        files go): PreCompact still starts its worker (the pid file kept in the hook
        folder itself), SessionStart waits for it and gives the block, and the journal
        holds one ``hook_error`` note saying so, which ``audit`` shows, however many
        workers run (before: each hook printed an error line and started no worker, so
        nothing was ingested and no block given)."""
        journal, path = tmp_path / "journal.db", _session().write(tmp_path / "t.jsonl")
        root = Path(f"{journal}.claude-code")
        root.mkdir()
        (root / "running").write_text("in the way")
        pre = {"session_id": "s-1", "hook_event_name": "PreCompact", "transcript_path": str(path)}
        start = {"session_id": "s-1", "hook_event_name": "SessionStart", "source": "compact"}
        for _ in range(2):
            assert hook_main(["--journal", str(journal)], io.StringIO(json.dumps(pre))) == 0
            out = io.StringIO()
            hook_main(
                ["--journal", str(journal), "--wait", "60"], io.StringIO(json.dumps(start)), out
            )
            assert RULE in json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"]
        assert wait_idle(str(journal), 60)
        assert "tierlog" not in capsys.readouterr().err
        assert (root / "running").read_text() == "in the way"
        with eventstore.open(journal) as j:
            assert j.session("s-1").state.turns > 0
            notes = [e for e in j.session(HOOKS_SESSION).events() if isinstance(e, Noted)]
            audited = audit(j).sessions[HOOKS_SESSION].notes
        assert [n.kind for n in notes] == ["hook_error"]
        assert f"{root / 'running'} is not a folder" in notes[0].text
        assert [n.text for n in audited] == [notes[0].text]


def _events(journal: Path, sid: str) -> list[tuple[str, str]]:
    """A session's stored events, its ingest positions aside."""
    with eventstore.open(journal) as j:
        return [row for row in j.recorder.read_payloads(sid) if row[0] != "Ingested"]


class TestALineReadBeforeItsNewline:
    @pytest.mark.parametrize("cut", [1, 3, 5])
    def test_the_worker_reads_on_as_the_whole_file_gives(self, tmp_path: Path, cut: int) -> None:
        """The Stop hook's worker reads the transcript while Claude Code has written an
        entry but not its newline, then the next one reads the grown file: event for
        event a fresh ingest's (no later line named one too far)."""
        lines = _session().dump().encode().splitlines(keepends=True)
        journal, path = tmp_path / "journal.db", tmp_path / "t.jsonl"
        path.write_bytes(b"".join(lines[:cut]) + lines[cut].rstrip(b"\n"))
        _run("record", journal, path)
        path.write_bytes(b"".join(lines))
        _run("record", journal, path)
        _run("record", tmp_path / "fresh.db", path)
        assert Folder(str(journal), "s-1").read("error") is None
        assert _events(journal, "s-1") == _events(tmp_path / "fresh.db", "s-1")


class TestAnotherSessionsTranscript:
    @pytest.mark.parametrize("event", ["precompact", "record"])
    def test_it_is_not_ingested_as_the_session_and_is_noted(
        self, tmp_path: Path, event: str
    ) -> None:
        """Session s-1 recorded, then its transcript path holds session s-2's file: the
        worker ingests nothing (s-2 is no session, s-1 and its ``ingested`` mark are as
        they were), prints nothing for the summarizer, and notes a ``hook_error`` naming
        both sessions, which ``audit`` shows."""
        journal, path = tmp_path / "journal.db", tmp_path / "t.jsonl"
        _run("record", journal, _session().write(path))
        folder = Folder(str(journal), "s-1")
        mark, before = folder.read("ingested"), _events(journal, "s-1")
        other = Script(session_id="s-2")
        other.user("Deploy to staging. Never run migrations.")
        other.assistant(other.tool_use("t9", "Bash", command="make deploy"), prompt=1_000)
        other.result("t9", "Exit code 1\nno credentials", error=True)
        other.write(path)
        assert _run(event, journal, path) == ""
        assert folder.read("ingested") == mark
        assert _events(journal, "s-1") == before
        error = folder.read("error")
        assert error is not None
        assert "transcript of session 's-2', not of session 's-1'" in error
        with eventstore.open(journal) as j:
            assert sorted(j.sessions()) == [HOOKS_SESSION, "s-1"]
            notes = audit(j).sessions[HOOKS_SESSION].notes
        assert [n.kind for n in notes] == ["hook_error"]
        assert f"{event} for session s-1" in notes[0].text
        assert "'s-2'" in notes[0].text

    def test_a_resumed_sessions_file_is_the_session_it_goes_on_as(self, tmp_path: Path) -> None:
        """A file whose first entries carry an older session's id (a resumed session's
        copy) and whose chain goes on as s-1 is s-1's: ingested, noted as mixed."""
        s = _session()
        for entry in s.lines[:3]:
            entry["sessionId"] = "older-1"
        journal = tmp_path / "journal.db"
        _run("record", journal, s.write(tmp_path / "t.jsonl"))
        assert Folder(str(journal), "s-1").read("error") is None
        with eventstore.open(journal) as j:
            assert j.sessions() == ["s-1"]
            assert [n.kind for n in audit(j).sessions["s-1"].notes] == ["mixed_sessions"]
