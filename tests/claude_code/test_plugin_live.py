"""tierlog's hooks in the real Claude Code CLI, against the mock Messages API.

Each scenario runs once per module (a CLI exchange takes seconds) and several tests read
what it left: the requests the mock received, the transcript, the journal. The hooks
are installed as a user would (``tierlog claude-code install --project``).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import eventstore
from eventstore._retell import HEADER
from eventstore.claude_code import _ingest, _install, _settings, review_session
from eventstore.claude_code._hook import FOLDER_SUFFIX, wait_idle
from eventstore.claude_code._worker import SUMMARIZER_HEADER
from eventstore.cli import main
from reducers import Compacted, Retold
from tests.claude_code import cli
from tests.claude_code.mock_api import MockApi, Reply, Text, bash, say

RULE = "Never modify files under /etc."
FAILING = "cat /etc/nonexistent-file"
DROPS_BOTH = "Listed the folder and echoed a few words."
CARRIES_BOTH = (
    "The user said: never modify files under /etc. "
    "The command cat /etc/nonexistent-file failed: No such file or directory."
)
WAIT = 120.0


def near_window(text: str) -> Reply:
    """A reply reporting a prompt near the window: the next request compacts first."""
    return Reply(blocks=(Text(text=text),), prompt_tokens=190_000)


@attrs.frozen(kw_only=True)
class Scenario:
    """What one scenario left behind."""

    api: MockApi
    claude: cli.ClaudeCode
    journal: Path
    session_id: str
    midway: tuple[Any, ...] = ()  # the journal's events once the run that compacted ended

    def events(self) -> list[Any]:
        with eventstore.open(self.journal) as journal:
            return list(journal.session(self.session_id).events())


def _setup(cli_binary: Path, folder: Path, api: MockApi, *options: str) -> cli.ClaudeCode:
    home, project = folder / "home", folder / "project"
    home.mkdir()
    project.mkdir()
    assert main(["claude-code", "install", "--project", str(project), *options]) == 0
    return cli.ClaudeCode(api=api, home=home, project=project, binary=cli_binary)


def _journal(claude: cli.ClaudeCode) -> Path:
    return claude.project / ".claude" / "tierlog" / "journal.db"


def _texts(request: dict[str, Any]) -> str:
    """Everything the model was sent in one request, as one text."""
    return json.dumps(request.get("messages"), ensure_ascii=False) + json.dumps(
        request.get("system"), ensure_ascii=False
    )


# -- auto-compaction, twice ----------------------------------------------------------------
@pytest.fixture(name="auto", scope="module")
def _auto(cli_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """A rule and a failing call; an auto-compaction whose summary drops both; more work;
    a second auto-compaction whose summary carries both."""
    with MockApi() as api:
        claude = _setup(cli_binary, tmp_path_factory.mktemp("auto"), api)
        api.add(bash(FAILING), bash("ls"), bash("echo a"), near_window("Looked around."))
        api.summaries.extend([DROPS_BOTH, CARRIES_BOTH])
        first = claude.run(f"{RULE} Look around the project.")
        api.add(bash("echo b"), bash("echo c"), near_window("Done again."))
        claude.run("And again?", resume=first.session_id)
        assert wait_idle(str(_journal(claude)), WAIT)
        with eventstore.open(_journal(claude)) as journal:
            midway = tuple(journal.session(first.session_id).events())
        api.add(say("Fine."))
        claude.run("Keep going.", resume=first.session_id)
        assert wait_idle(str(_journal(claude)), WAIT)
        yield Scenario(
            api=api,
            claude=claude,
            journal=_journal(claude),
            session_id=first.session_id,
            midway=midway,
        )


class TestAutoCompaction:
    def test_the_request_after_the_compaction_carries_the_block_naming_both(
        self, auto: Scenario
    ) -> None:
        """The model's first request after the compaction holds tierlog's block, stating
        the rule and the failed call."""
        after = _texts(auto.api.after_summary(0))
        assert HEADER in after
        block = after[after.index(HEADER) :]
        assert RULE in block.split("\\n")[1]
        assert FAILING in block.split("\\n")[2]

    def test_the_journal_records_the_compaction_the_drop_and_the_re_tell(
        self, auto: Scenario
    ) -> None:
        """The compaction is there, its review says the summary does not evidence either,
        and a re-tell turn right after it states both."""
        with eventstore.open(auto.journal) as journal:
            reviews = review_session(journal, auto.session_id)
        assert {o.kind for o in reviews[0].not_evidenced} == {"constraint", "negative_fact"}
        assert reviews[0].given_back == reviews[0].not_evidenced
        assert not reviews[1].not_evidenced
        events = auto.events()
        compactions = [i for i, e in enumerate(events) if isinstance(e, Compacted)]
        retolds = [i for i, e in enumerate(events) if isinstance(e, Retold)]
        assert len(retolds) == 1
        assert compactions[0] < retolds[0] < compactions[1]
        told = events[retolds[0]]
        assert [k.split(": ", 1)[1] for k in told.constraints] == [RULE]
        assert [FAILING in k for k in told.dispositions] == [True]

    def test_the_re_tell_is_recorded_by_the_end_of_the_run_that_compacted(
        self, auto: Scenario
    ) -> None:
        """Once the run whose prompt compacted has ended (and its hooks' work is done), the
        journal holds the compaction and the re-tell: no later run is needed."""
        kinds = [type(e).__name__ for e in auto.midway]
        assert kinds.count("Compacted") == 1
        assert kinds.index("Compacted") < kinds.index("Retold")

    def test_a_second_compaction_that_carries_both_leads_to_no_re_tell(
        self, auto: Scenario
    ) -> None:
        """Its summary states the rule and the failure: nothing is given back after it,
        neither to the model nor in the journal."""
        assert HEADER in _texts(auto.api.summary_requests()[1])  # the summarizer saw it
        assert HEADER not in _texts(auto.api.after_summary(1))
        events = auto.events()
        last = max(i for i, e in enumerate(events) if isinstance(e, Compacted))
        assert not [e for e in events[last:] if isinstance(e, Retold)]

    def test_nothing_is_owed_at_the_end(self, auto: Scenario) -> None:
        """``tierlog owed`` finds nothing owed (exit 0) and no block is queued."""
        assert main(["owed", str(auto.journal), auto.session_id]) == 0
        folder = Path(f"{auto.journal}{FOLDER_SUFFIX}")
        assert not (folder / f"{auto.session_id}.queue").exists()

    def test_the_hooked_journal_is_what_ingest_makes_of_the_transcript(
        self, auto: Scenario, tmp_path: Path
    ) -> None:
        """``tierlog ingest`` of the same transcript into a fresh journal writes the same
        events (re-tells included; the hooks ingest at compactions and after deliveries,
        so they hold a prefix of it, and where each ingest got to: written at those
        versions, the fresh events compare), and the hooked journal verifies."""
        with eventstore.open(auto.journal) as journal:
            hooked = list(journal.recorder.read_payloads(auto.session_id))
        loaded = _ingest.load(auto.claude.transcript(auto.session_id))
        again = _ingest._fresh(auto.session_id, loaded.plan, _ingest._slots(hooked)).payloads
        assert again[: len(hooked)] == hooked
        assert sum(kind == "Retold" for kind, _ in again) == 1
        assert main(["verify", str(auto.journal)]) == 0

    def test_audit_shows_what_was_given_back_and_when(
        self, auto: Scenario, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The audit's review of the first compaction says, for each thing its summary
        dropped, which re-tell gave it back and when; the second's gives nothing back."""
        main(["audit", str(auto.journal), auto.session_id])
        out = capsys.readouterr().out
        first, second = out.split("compaction reviews")[1].split("\n    n")[1:3]
        assert "given back: 2 of 2 not evidenced" in first
        given = [x for x in first.splitlines() if "NOT evidenced, given back at v" in x]
        assert len(given) == 2
        assert all("right after the compaction)" in x for x in given)
        assert "given back" not in second

    def test_the_report_shows_it_too(self, auto: Scenario, tmp_path: Path) -> None:
        """``tierlog report`` draws the same review: the drop and the re-tell that gave it back."""
        page = tmp_path / "report.html"
        assert main(["report", str(auto.journal), auto.session_id, "-o", str(page)]) == 0
        html = page.read_text()
        assert html.count("NOT evidenced, given back at v") == 2


# -- a manual /compact -----------------------------------------------------------------------
@pytest.fixture(name="manual", scope="module")
def _manual(cli_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """A rule, a failing call, then ``/compact`` with a summary that drops both, then a prompt."""
    with MockApi() as api:
        claude = _setup(cli_binary, tmp_path_factory.mktemp("manual"), api)
        api.add(bash(FAILING), say("It is missing."))
        api.summaries.append("Checked a file.")
        first = claude.run(f"{RULE} Show me the config.")
        claude.run("/compact keep it short", resume=first.session_id)
        assert wait_idle(str(_journal(claude)), WAIT)
        api.add(say("Going on."))
        claude.run("Go on.", resume=first.session_id)
        assert wait_idle(str(_journal(claude)), WAIT)
        yield Scenario(
            api=api, claude=claude, journal=_journal(claude), session_id=first.session_id
        )


class TestManualCompaction:
    def test_the_next_prompts_request_carries_the_block(self, manual: Scenario) -> None:
        """After ``/compact``, the model's next request holds the block naming both."""
        after = _texts(manual.api.after_summary(0))
        assert HEADER in after
        assert RULE in after[after.index(HEADER) :]
        assert FAILING in after[after.index(HEADER) :]

    def test_the_journal_records_the_manual_compaction_and_the_re_tell(
        self, manual: Scenario
    ) -> None:
        """The compaction's boundary note says manual; a re-tell follows it; nothing owed."""
        events = manual.events()
        kinds = [type(e).__name__ for e in events]
        assert kinds.index("Compacted") < kinds.index("Retold")
        assert any('"trigger": "manual"' in getattr(e, "content", "") for e in events)
        assert main(["owed", str(manual.journal), manual.session_id]) == 0


# -- never in the way ----------------------------------------------------------------------
def _compacts(claude: cli.ClaudeCode, api: MockApi) -> str:
    """Two runs whose second auto-compacts; both must succeed. The session id."""
    api.add(bash(FAILING), bash("ls"), bash("echo a"), near_window("ok"))
    first = claude.run(f"{RULE} Look around.")
    api.add(say("Sure."))
    claude.run("And again?", resume=first.session_id)
    return first.session_id


def _boundaries(claude: cli.ClaudeCode, session_id: str) -> int:
    lines = claude.transcript(session_id).read_text().splitlines()
    return sum(json.loads(x).get("subtype") == "compact_boundary" for x in lines if x)


class TestNeverInTheWay:
    def test_a_broken_journal_path_leaves_the_session_working(
        self, cli_binary: Path, tmp_path: Path
    ) -> None:
        """With a journal under a file (no folder can be made), Claude Code still runs,
        compacts and answers."""
        with MockApi() as api:
            claude = _setup(cli_binary, tmp_path, api)
            _rewire(claude, "--journal /dev/null/journal.db")
            session_id = _compacts(claude, api)
            assert _boundaries(claude, session_id) == 1
            assert len(api.summary_requests()) == 1

    def test_an_unreadable_transcript_is_a_note_and_the_session_goes_on(
        self, cli_binary: Path, tmp_path: Path
    ) -> None:
        """When the transcript the hook is given is not one it can read, the run succeeds
        and the journal notes it (audit exits 1 showing it)."""
        with MockApi() as api:
            claude = _setup(cli_binary, tmp_path, api)
            garbage = tmp_path / "garbage.jsonl"
            garbage.write_bytes(b"\x00\xff not a transcript\n")
            swap = f"d['transcript_path'] = {str(garbage)!r}"
            _rewire(claude, _swapping(swap))
            session_id = _compacts(claude, api)
            assert _boundaries(claude, session_id) == 1
            assert wait_idle(str(_journal(claude)), WAIT)
        done = subprocess.run(
            [sys.executable, "-m", "eventstore", "audit", str(_journal(claude))],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 1
        assert "hook_error" in done.stdout
        assert str(garbage) in done.stdout


def _swapping(statement: str) -> str:
    """A command that runs ``statement`` on the hook's input ``d``, then passes it on."""
    code = f"import json, sys; d = json.load(sys.stdin); {statement}; print(json.dumps(d))"
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} |"


class TestTellSummarizer:
    def test_the_summarizer_is_told_what_to_carry(self, cli_binary: Path, tmp_path: Path) -> None:
        """Installed with --tell-summarizer, PreCompact's output (the live obligations)
        is in the summary request; the block still follows the compaction."""
        with MockApi() as api:
            claude = _setup(cli_binary, tmp_path, api, "--tell-summarizer")
            _compacts(claude, api)
            asked = _texts(api.summary_requests()[0])
            assert SUMMARIZER_HEADER in asked
            told = asked[asked.index(SUMMARIZER_HEADER) :]
            assert RULE in told
            assert FAILING in told
            assert HEADER in _texts(api.after_summary(0))
            assert wait_idle(str(_journal(claude)), WAIT)


def _rewire(claude: cli.ClaudeCode, change: str) -> None:
    """Change the installed hooks' command: ``change`` ending in ``|`` goes before it (it
    rewrites the hook's input); one starting with ``--journal`` replaces the journal."""
    settings = claude.project / ".claude" / "settings.json"
    command = json.loads(settings.read_text())["hooks"]["PreCompact"][0]["hooks"][0]["command"]
    if change.startswith("--journal"):
        command = command[: command.index("--journal")] + change
    else:
        command = f"{change} {command}"
    text = _settings.uninstall(settings.read_text())
    settings.write_text(_settings.install(text, _install.groups(command)))
