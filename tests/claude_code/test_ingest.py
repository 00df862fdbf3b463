"""Ingesting Claude Code transcripts: the mapping, the compaction judged, atomic and idempotent."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import eventstore
import reducers
from eventstore._ops._audit import verify
from eventstore.claude_code import _ingest, _write
from eventstore.claude_code import _transcript as cc
from eventstore.claude_code._review import preamble
from eventstore.cli import main
from tests import transcripts
from tests.helpers import rows
from tests.transcripts import Script

LONG_ID = "258c7280-ae70-4798-800f-63464d01a85d"


@pytest.fixture(scope="module", name="long_file")
def _long_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return transcripts.plain_copy(transcripts.LONG_SESSION, tmp_path_factory.mktemp("long"))


@pytest.fixture(scope="module", name="real")
def _real(
    tmp_path_factory: pytest.TempPathFactory, long_file: Path
) -> tuple[Path, dict[str, eventstore.IngestResult]]:
    """One journal holding the three real sessions (read only by the tests that use it)."""
    db = tmp_path_factory.mktemp("real") / "real.db"
    with eventstore.open(db) as journal:
        results = {
            p.name: eventstore.ingest(journal, p)
            for p in (long_file, transcripts.SHORT, transcripts.TOOL_HEAVY)
        }
    return db, results


def _raw(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in transcripts.text_of(path).splitlines() if line.strip()]


def _blocks(path: Path, kind: str) -> list[dict[str, object]]:
    return [
        b
        for e in _raw(path)
        if e["type"] in ("user", "assistant") and not e.get("isSidechain")
        for b in e["message"]["content"]  # type: ignore[index]
        if isinstance(b, dict) and b.get("type") == kind
    ]


def _run(tmp_path: Path, script: Script) -> tuple[eventstore.Journal, eventstore.IngestResult]:
    journal = eventstore.open(tmp_path / "t.db")
    return journal, eventstore.ingest(journal, script.write(tmp_path / "t.jsonl"))


class TestRealSession:
    def test_counts_match_the_file(
        self, real: tuple[Path, dict[str, eventstore.IngestResult]]
    ) -> None:
        """Calls, failed and rejected results are counted as the raw file holds them."""
        for name, path in [
            (LONG_ID + ".jsonl", transcripts.LONG_SESSION),
            ("short.jsonl", transcripts.SHORT),
            ("tool_heavy.jsonl", transcripts.TOOL_HEAVY),
        ]:
            r = real[1][name]
            results = _blocks(path, "tool_result")
            rejected = sum(str(b["content"]).startswith(cc.REJECTED_TEXT) for b in results)
            failed = sum(b.get("is_error") is True for b in results) - rejected
            assert (r.calls, r.failed, r.rejected) == (
                len(_blocks(path, "tool_use")),
                failed,
                rejected,
            ), name
            assert r.warnings == ()

    def test_turns_and_calls_in_the_journal(
        self, real: tuple[Path, dict[str, eventstore.IngestResult]]
    ) -> None:
        """Every call is opened and resolved; each result names its line."""
        db, results = real
        with eventstore.open(db, readonly=True) as journal:
            state = journal.session(LONG_ID).state
        r = results[LONG_ID + ".jsonl"]
        assert (state.turns, len(state.call_ids), dict(state.open_calls)) == (r.turns, 186, {})
        facts = {k: (d.disposition, d.reason.split(":")[0]) for k, d in state.dispositions.items()}
        assert facts["Bash: git push 2>&1 (line 615)"] == ("failed", "line 615")
        assert facts["interrupted: TaskOutput: bd0afab (line 495)"] == ("rejected", "line 495")
        assert facts["TaskOutput: bd0afab (line 494)"] == ("superseded", "resolved later")
        (read,) = [k for k in facts if k.startswith("Read: /tmp/claude-1000/")]
        assert facts[read][0] == "failed"  # after the boundary: a file that did not exist

    def test_occupancy_at_the_boundary_is_within_5_percent_of_pre_tokens(
        self, real: tuple[Path, dict[str, eventstore.IngestResult]]
    ) -> None:
        """The journal's occupancy where Claude Code compacted is its preTokens, near enough."""
        db, results = real
        (review,) = results[LONG_ID + ".jsonl"].compactions
        with eventstore.open(db, readonly=True) as journal:
            before = journal.session(LONG_ID).state_at(review.version - 1)
        assert review.pre_tokens == 167_094
        assert review.occupancy == before.occupancy
        assert abs(before.occupancy - 167_094) / 167_094 < 0.05
        assert abs(before.occupancy - 167_094) < 100  # measured: 167,104

    def test_occupancy_is_each_api_calls_prompt_and_output(
        self, real: tuple[Path, dict[str, eventstore.IngestResult]], long_file: Path
    ) -> None:
        """After each of the 152 API calls' turns, the journal holds exactly its prompt and
        output tokens."""
        calls = [
            i.usage.prompt + i.usage.output
            for i in cc.read(long_file).items
            if isinstance(i, cc.Message) and i.role == "assistant" and i.usage
        ]
        seen = []
        with eventstore.open(real[0], readonly=True) as journal:
            state = reducers.SessionState()
            for event in journal.session(LONG_ID).events():
                state = reducers.apply(state, event)
                if isinstance(event, reducers.TurnAppended) and event.role == "assistant":
                    seen.append(state.occupancy)
        assert len(calls) == 152
        assert seen == calls

    def test_the_compaction_is_judged_and_its_marker_refused(
        self, real: tuple[Path, dict[str, eventstore.IngestResult]], long_file: Path
    ) -> None:
        """C1-C5 pass for the real compaction; M2 refuses the marker, naming what is missing."""
        db, results = real
        (review,) = results[LONG_ID + ".jsonl"].compactions
        (boundary,) = [i for i in cc.read(long_file).items if isinstance(i, cc.Boundary)]
        with eventstore.open(db, readonly=True) as journal:
            s = journal.session(LONG_ID)
            events = list(s.events())
            before = s.state_at(review.version - 1)
        node = events[review.version - 1]
        assert isinstance(node, reducers.Compacted)
        end = before.end
        assert (node.input_lo, node.input_hi, node.covers_lo, node.covers_hi) == (0, end, 0, end)
        assert (node.tail_start, node.tier, node.summary) == (end, 1, boundary.summary)
        refused = events[review.version]
        assert isinstance(refused, reducers.MarkerRefused)
        assert [v.rule for v in refused.violations] == ["M2"]
        assert not any(isinstance(e, reducers.CompactionRefused) for e in events)
        assert (review.marker_status, review.refused_rules) == ("refused", ())
        assert [(o.key, o.evidenced) for o in review.not_evidenced] == [
            ("Bash: git push 2>&1 (line 615)", False),  # the interruption is in the summary
        ]
        resolved = [o.key for o in review.obligations if o.resolved_later]
        assert len(resolved) == 5  # the refused TaskOutput, four mix test runs, later done
        assert review.turns_compacted == before.turn_index(end) == 232

    def test_verify_passes_and_state_at_replays(
        self,
        real: tuple[Path, dict[str, eventstore.IngestResult]],
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """verify re-derives every ingested decision; state --at gives the replayed hash."""
        db = real[0]
        assert main(["verify", str(db)]) == 0
        (review,) = real[1][LONG_ID + ".jsonl"].compactions
        capsys.readouterr()
        with eventstore.open(db, readonly=True) as journal:
            events = list(journal.session(LONG_ID).events())
        for at in (review.version - 1, review.version + 1, len(events)):
            assert main(["state", str(db), LONG_ID, "--at", str(at), "--json"]) == 0
            shown = json.loads(capsys.readouterr().out)
            assert shown["sha256"] == reducers.fold(events[:at]).sha256

    def test_ingesting_again_changes_nothing(
        self, real: tuple[Path, dict[str, eventstore.IngestResult]], long_file: Path
    ) -> None:
        """The same file again: reported unchanged, not one row written."""
        db, results = real
        before = rows(db)
        with eventstore.open(db) as journal:
            again = eventstore.ingest(journal, long_file)
        assert rows(db) == before
        assert again.unchanged
        assert again.events == results[LONG_ID + ".jsonl"].events


class TestTokens:
    def test_a_call_holds_what_its_prompt_and_output_add(self, tmp_path: Path) -> None:
        """Other turns are estimated; a call's turn takes its prompt and output beyond them."""
        s = Script()
        s.user("a" * 400)  # estimate 100
        s.assistant(s.tool_use("t1", "Read", file_path="/a"), prompt=1_000, output=50)
        s.result("t1", "b" * 300)  # renders as "[tool_result t1] " + 300 chars: 79
        s.user("c" * 100)  # 25
        s.assistant(s.text("done"), prompt=1_450, output=7)
        s.user("d" * 80)  # 20
        journal, _ = _run(tmp_path, s)
        turns = journal.session("s-1").turns()
        note = len(preamble("s-1")) // 4
        first = 1_000 + 50 - (note + 100)  # the system prompt and tools, and the reply
        second = 1_450 + 7 - (1_000 + 50 + 79 + 25)
        assert [t.tokens for t in turns] == [note, 100, first, 79, 25, second, 20]
        journal.close()

    def test_estimates_where_no_usage_exists(self, tmp_path: Path) -> None:
        """Without usage blocks every turn is 4 characters a token, at least one."""
        s = Script()
        s.user("x" * 40)
        s.entry("assistant", message={"id": "m", "role": "assistant", "content": "ok"})
        journal, _ = _run(tmp_path, s)
        assert [t.tokens for t in journal.session("s-1").turns()][1:] == [10, 1]
        journal.close()

    def test_a_shrinking_prompt_still_gives_every_turn_a_token(self, tmp_path: Path) -> None:
        """A prompt smaller than before (context edited away) never makes a zero-token turn."""
        s = Script()
        s.user("go")
        s.assistant(s.text("one"), prompt=5_000, output=10)
        s.user("again")
        s.assistant(s.text("two"), prompt=4_000, output=10)
        journal, _ = _run(tmp_path, s)
        assert min(t.tokens for t in journal.session("s-1").turns()) == 1
        journal.close()


class TestObligations:
    def test_results_rejections_and_interruptions(self, tmp_path: Path) -> None:
        """Error results are failed facts, refused calls rejected, interruptions rejected too."""
        s = Script()
        s.user("deploy it")
        s.assistant(
            s.tool_use("t1", "Bash", command="make deploy 2>&1"),
            s.tool_use("t2", "Edit", file_path="/home/u/proj/prod.env"),
        )
        s.result("t1", "Exit code 2\nmake: *** no rule", error=True)
        s.result("t2", cc.REJECTED_TEXT + ". STOP", error=True, rejected=True)
        s.user("[Request interrupted by user for tool use]")
        journal, r = _run(tmp_path, s)
        state = journal.session("s-1").state
        facts = {k: (d.disposition, d.reason) for k, d in state.dispositions.items()}
        assert facts == {
            "Bash: make deploy 2>&1 (line 4)": ("failed", "line 4: make: *** no rule"),
            "Edit: prod.env (line 5)": ("rejected", f"line 5: {cc.REJECTED_TEXT}. STOP"),
            "interrupted: Edit: prod.env (line 6)": (
                "rejected",
                "line 6: [Request interrupted by user for tool use]",
            ),
        }
        assert (r.failed, r.rejected, r.interruptions, dict(state.open_calls)) == (1, 1, 1, {})
        journal.close()

    def test_rules_the_user_typed_are_pending_constraints(self, tmp_path: Path) -> None:
        """never/do not/don't/always/must/only in typed text, queued text included; not replies."""
        s = Script()
        s.user("Refactor the parser. Never modify files under /etc. Thanks!")
        s.assistant(s.text("I will never do that. Only the parser."), prompt=200)
        s.queue("and don't push to main")
        s.user("<command-name>/always</command-name>")
        journal, r = _run(tmp_path, s)
        state = journal.session("s-1").state
        assert {k: c.text for k, c in state.constraints.items()} == {
            "heuristic: Never modify files under /etc.": "Never modify files under /etc.",
            "heuristic: and don't push to main": "and don't push to main",
        }
        assert (r.constraints, r.queued) == (2, 1)
        journal.close()

    def test_a_result_for_no_open_call_is_a_warning(self, tmp_path: Path) -> None:
        """A tool_result whose tool_use is not in the file is reported and skipped."""
        s = Script()
        s.user("go")
        s.result("toolu_ghost", "output")
        journal, r = _run(tmp_path, s)
        assert r.warnings == (
            "line 2: tool_result for toolu_ghost, which is not an open call: ignored",
        )
        journal.close()


def _with_boundary(summary: str, *, resolve: bool = True) -> Script:
    s = Script()
    s.user("Fix the parser. Never modify files under /etc.")
    s.assistant(s.tool_use("t1", "Bash", command="git push"), prompt=2_000, output=20)
    s.result("t1", "Exit code 128\nfatal: no upstream", error=True)
    s.assistant(s.tool_use("t2", "Read", file_path="/home/u/proj/lib/parser.ex"), prompt=2_100)
    if resolve:
        s.result("t2", "defmodule Parser do")
    s.boundary(2_130, summary)
    s.assistant(s.text("Continuing."), prompt=900, output=5)
    return s


class TestCompactions:
    def test_a_summary_that_evidences_everything_gets_a_valid_marker(self, tmp_path: Path) -> None:
        """Rule quoted, failure named with its word: the marker holds; resume gives the digest."""
        summary = 'User: "Never modify files under /etc."\n- git push failed (no upstream)\n'
        journal, r = _run(tmp_path, _with_boundary(summary))
        (review,) = r.compactions
        assert (review.marker_status, review.not_evidenced) == ("emitted", ())
        assert [o.kind for o in review.obligations] == ["constraint", "negative_fact"]
        s = journal.session("s-1")
        context = s.resume(review.marker_id or "")
        first = json.loads(context.content.splitlines()[0])
        assert (context.source, first["kind"], first["summary"]) == ("digest", "summary", summary)
        journal.close()

    def test_a_summary_that_drops_a_rule_is_refused_m1(self, tmp_path: Path) -> None:
        """The rule is not in the summary: M1 refuses the marker and the audit quotes the rule."""
        journal, r = _run(tmp_path, _with_boundary("- git push failed (no upstream)"))
        (review,) = r.compactions
        assert (review.marker_status, review.marker_rules) == ("refused", ("M1",))
        (missing,) = review.not_evidenced
        assert (missing.kind, missing.quote) == ("constraint", "Never modify files under /etc.")
        assert missing.raised_at_turn == 1
        journal.close()

    def test_an_open_call_at_the_boundary_is_evidenced_by_its_path(self, tmp_path: Path) -> None:
        """A call without a result yet is an obligation; naming its file carries it."""
        summary = "Never modify files under /etc.\ngit push failed\nReading lib/parser.ex now"
        journal, r = _run(tmp_path, _with_boundary(summary, resolve=False))
        (review,) = r.compactions
        call = next(o for o in review.obligations if o.kind == "open_call")
        assert (call.key, call.detail, call.evidenced) == ("t2", "Read: lib/parser.ex", True)
        assert call.quote.startswith("[tool_use t2] Read")
        assert review.marker_status == "emitted"
        journal.close()

    def test_a_second_compaction_replaces_the_first(self, tmp_path: Path) -> None:
        """Claude Code's next summary replaces the last: the old marker is invalidated (M3)."""
        good = 'User: "Never modify files under /etc."\n- git push failed (no upstream)\n'
        s = _with_boundary(good)
        s.user("more")
        s.assistant(s.text("ok"), prompt=1_200, output=5)
        line = len(s.lines) + 1
        s.boundary(1_210, "second summary\n" + good)
        s.assistant(s.text("again"), prompt=700, output=5)
        journal, r = _run(tmp_path, s)
        first, second = r.compactions
        state = journal.session("s-1").state
        node = state.nodes[second.node_id]
        assert node.replaces == (first.node_id,)
        assert (node.input_lo, node.input_hi, node.covers_lo) == (0, node.covers_hi, 0)
        assert (first.marker_status, first.marker_rules) == ("invalidated", ("M3",))
        assert (second.marker_status, second.line, second.pre_tokens) == ("emitted", line, 1_210)
        assert second.turns_compacted == 4  # the note after the first boundary, then 3 turns
        journal.close()


class TestAtomic:
    def test_a_failure_while_writing_leaves_nothing(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The session's turns are rolled back with the compaction that failed after them."""

        def broken(session: eventstore.Session, boundary: cc.Boundary) -> None:
            raise eventstore.JournalError("disk on fire")

        monkeypatch.setattr(_write, "_compact", broken)
        journal = eventstore.open(tmp_path / "t.db")
        with pytest.raises(eventstore.JournalError, match="disk on fire"):
            eventstore.ingest(journal, _with_boundary("x").write(tmp_path / "t.jsonl"))
        assert journal.sessions() == []
        journal.close()
        assert rows(tmp_path / "t.db") == []

    def test_another_transcript_under_a_taken_id_is_refused(self, tmp_path: Path) -> None:
        """Same sessionId, other content: InvalidEvent, and the stored session is untouched."""
        journal, _ = _run(tmp_path, _with_boundary("a summary"))
        before = rows(tmp_path / "t.db")
        other = _with_boundary("another summary").write(tmp_path / "other.jsonl")
        with pytest.raises(eventstore.InvalidEvent, match="already exists with other content"):
            eventstore.ingest(journal, other)
        journal.close()
        assert rows(tmp_path / "t.db") == before

    def test_an_unknown_format_is_refused(self, tmp_path: Path) -> None:
        """Only claude-code is known."""
        with (
            eventstore.open(tmp_path / "t.db") as journal,
            pytest.raises(eventstore.InvalidEvent, match="unknown format 'codex'"),
        ):
            eventstore.ingest(journal, transcripts.SHORT, format="codex")


class TestCommandLine:
    def test_ingest_then_audit(
        self, tmp_path: Path, long_file: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """ingest reports counts and the compaction; audit shows each obligation and a quote."""
        db = str(tmp_path / "cli.db")
        assert main(["ingest", db, str(long_file), str(transcripts.SHORT)]) == 0
        out = capsys.readouterr().out
        assert f"{LONG_ID}: ingested, 736 events" in out  # 735 and where the ingest got to
        assert "preTokens 167,094, occupancy 167,104 (+0.01%)" in out
        assert "not evidenced: Bash: git push 2>&1 (line 615) (failed) (tierlog" in out
        assert main(["ingest", db, str(long_file)]) == 0
        assert "unchanged (already ingested)" in capsys.readouterr().out
        assert main(["audit", db]) == 1
        text = capsys.readouterr().out
        assert "compaction reviews (1):" in text
        said = "NOT evidenced negative_fact 'Bash: git push 2>&1 (line 615)' (failed) at turn 104"
        assert said + ": line 615: fatal: The current branch" in text
        assert main(["audit", db, LONG_ID, "--json"]) == 1
        (review,) = json.loads(capsys.readouterr().out)["sessions"][LONG_ID]["compaction_reviews"]
        assert (review["pre_tokens"], review["marker_status"]) == (167_094, "refused")
        assert main(["ingest", db, str(transcripts.SHORT), "--json"]) == 0
        (result,) = json.loads(capsys.readouterr().out)
        assert (result["unchanged"], result["rejected"]) == (True, 2)

    def test_bad_files_exit_2_naming_the_line_and_create_nothing(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Another tool's file is a one-line error; with no good file no journal appears."""
        junk = tmp_path / "export.jsonl"
        junk.write_text('{"session_id": "x", "type": "SessionStarted", "payload": {}}\n')
        db = tmp_path / "none.db"
        assert main(["ingest", str(db), str(junk), str(transcripts.SUMMARIZER_RUN)]) == 2
        err = capsys.readouterr().err
        assert f"{junk}: line 1: not a Claude Code transcript" in err
        assert "line 1: only sidechain entries" in err
        assert "Traceback" not in err
        assert not db.exists()

    def test_good_files_go_in_beside_a_bad_one(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Each file is its own session: a bad one does not stop the others; exit 2."""
        db = tmp_path / "mixed.db"
        junk = tmp_path / "junk.jsonl"
        junk.write_text("not json\n{}\n")
        assert main(["ingest", str(db), str(junk), str(transcripts.SHORT)]) == 2
        captured = capsys.readouterr()
        assert "line 1: not JSON" in captured.err
        assert "55604662-cf2a-4331-851a-ec234028f8ca: ingested" in captured.out

    def test_a_truncated_last_line_is_a_warning(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A session still being written ingests up to its last sound line, exit 0."""
        cut = tmp_path / "cut.jsonl"
        text = transcripts.TOOL_HEAVY.read_text()
        cut.write_text(text[: len(text) - 100])
        assert main(["ingest", str(tmp_path / "c.db"), str(cut)]) == 0
        err = capsys.readouterr().err
        assert f"warning: {cut}: line 39: truncated or malformed last line skipped" in err


class TestInterruptions:
    def test_an_interruption_names_the_work_since_the_last_request(self, tmp_path: Path) -> None:
        """A call before the user's last request is not what a later interruption stopped."""
        s = Script()
        s.user("check the build")
        s.assistant(s.tool_use("t1", "Bash", command="make"), prompt=200)
        s.result("t1", "ok")
        s.user("now explain it")
        s.assistant(s.text("The build ..."), prompt=300)
        s.user("[Request interrupted by user]")
        journal, _ = _run(tmp_path, s)
        assert list(journal.session("s-1").state.dispositions) == ["interrupted: reply (line 6)"]
        journal.close()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
_SMALL = [json.loads(line) for line in transcripts.NOTES_2_0.read_text().splitlines()]


class TestAnyInput:
    @given(
        line=st.integers(0, len(_SMALL) - 1),
        path=st.lists(
            st.sampled_from(
                [
                    "message",
                    "content",
                    0,
                    "type",
                    "id",
                    "usage",
                    "input_tokens",
                    "parentUuid",
                    "uuid",
                    "sessionId",
                    "tool_use_id",
                    "is_error",
                    "input",
                    "text",
                ]
            ),
            min_size=1,
            max_size=4,
        ),
        value=_JSON,
    )
    @example(line=1, path=["type"], value=[])  # an unhashable entry type
    @example(line=2, path=["message", "id"], value={})  # an unhashable message id
    @example(line=3, path=["parentUuid"], value=[1])  # an unhashable parent
    @example(line=2, path=["message", "usage", "input_tokens"], value=2**70)  # overflow
    def test_a_mangled_entry_ingests_or_is_invalid_input(
        self, line: int, path: list[str | int], value: object
    ) -> None:
        """Any JSON value anywhere in an entry the CLI wrote: ingested or InvalidEvent."""
        entries = json.loads(json.dumps(_SMALL))
        target = entries[line]
        for step in path[:-1]:
            nxt = target[step] if _has(target, step) else None
            if not isinstance(nxt, dict | list):
                break
            target = nxt
        else:
            if isinstance(target, dict) or (isinstance(target, list) and _has(target, path[-1])):
                target[path[-1]] = value  # type: ignore[index]
        with tempfile.TemporaryDirectory() as folder:
            transcript = Path(folder) / "t.jsonl"
            transcript.write_text("".join(json.dumps(e) + "\n" for e in entries))
            with eventstore.open(Path(folder) / "t.db", synchronous="normal") as journal:
                try:
                    eventstore.ingest(journal, transcript)
                except eventstore.InvalidEvent:
                    assert journal.sessions() == []


def _has(container: object, key: object) -> bool:
    if isinstance(container, dict):
        return key in container
    return isinstance(container, list) and isinstance(key, int) and key < len(container)


def _payloads(db: Path, sid: str = "s-1") -> list[tuple[str, str]]:
    with eventstore.open(db, readonly=True) as journal:
        return list(journal.recorder.read_payloads(sid))


def _fresh(
    tmp_path: Path,
    transcript: Path,
    name: str = "fresh.db",
    like: list[tuple[str, str]] | None = None,
) -> list[tuple[str, str]]:
    """A fresh ingest's events; ``like``: with the ingest positions (and notes that the
    file was read whole) of those stored events at their versions."""
    if like is not None:
        loaded = _ingest.load(transcript)
        sid = loaded.transcript.session_id
        return _ingest._fresh(sid, loaded.plan, _ingest._slots(like)).payloads
    with eventstore.open(tmp_path / name, synchronous="normal") as journal:
        sid = eventstore.ingest(journal, transcript).session_id
    return _payloads(tmp_path / name, sid)


def _content(payloads: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [p for p in payloads if p[0] != "Ingested"]


def _growing() -> Script:
    """A session with every kind of step, one entry per API message (no split message)."""
    s = Script()
    s.user("Fix the parser. Never modify files under /etc.")
    s.assistant(s.tool_use("t1", "Bash", command="git push"), prompt=2_000, output=20)
    s.result("t1", "Exit code 128\nfatal: no upstream", error=True)
    s.queue("and keep the tests green")
    s.assistant(s.tool_use("t2", "Read", file_path="/home/u/proj/lib/parser.ex"), prompt=2_100)
    s.user("[Request interrupted by user for tool use]")
    s.user("go on")
    s.assistant(s.text("Reading it again."), prompt=2_300)
    s.boundary(
        2_330,
        'User: "Never modify files under /etc."\n- git push failed (no upstream)\n'
        "- the user interrupted reading lib/parser.ex",
    )
    s.assistant(s.text("Continuing."), prompt=900, output=5)
    s.user("thanks")
    return s


class TestGrowingTranscript:
    def test_every_cut_grows_into_what_the_whole_file_gives(self, tmp_path: Path) -> None:
        """Ingested at any line while being written, then whole: the new part is appended,
        verify passes, and the events equal a fresh ingest of the whole file."""
        s = _growing()
        whole = s.write(tmp_path / "whole.jsonl")
        content = _content(_fresh(tmp_path, whole))
        for cut in range(1, len(s.lines)):
            part = tmp_path / f"part{cut}.jsonl"
            part.write_text("".join(json.dumps(e) + "\n" for e in s.lines[:cut]))
            with eventstore.open(tmp_path / f"g{cut}.db", synchronous="normal") as journal:
                first = eventstore.ingest(journal, part)
                grown = eventstore.ingest(journal, whole)
                assert verify(journal) == [], cut
            stored = _payloads(tmp_path / f"g{cut}.db")
            assert stored == _fresh(tmp_path, whole, like=stored), cut
            same = len(_content(stored[: first.events])) == len(content)
            assert grown.appended_after == (None if same else first.events)
            assert grown.unchanged is same

    def test_a_file_cut_mid_line_then_finished_appends(self, tmp_path: Path) -> None:
        """The hostile tester's case: 12 lines and part of the 13th, then the whole file."""
        lines = transcripts.SHORT.read_bytes().splitlines(keepends=True)
        part = tmp_path / "growing.jsonl"
        part.write_bytes(b"".join(lines[:12]) + lines[12][:100])
        db = tmp_path / "g.db"
        with eventstore.open(db) as journal:
            first = eventstore.ingest(journal, part)
            grown = eventstore.ingest(journal, transcripts.SHORT)
        assert grown.appended_after == first.events < grown.events
        stored = _payloads(db, grown.session_id)
        assert stored == _fresh(tmp_path, transcripts.SHORT, like=stored)

    def test_a_boundary_ingested_before_its_summary_is_compacted_later(
        self, tmp_path: Path
    ) -> None:
        """The file ended at the boundary: no compaction then, the real one once it grows."""
        s = _growing()
        at = next(i for i, e in enumerate(s.lines) if e.get("subtype") == "compact_boundary")
        part = tmp_path / "part.jsonl"
        part.write_text("".join(json.dumps(e) + "\n" for e in s.lines[: at + 1]))
        whole = s.write(tmp_path / "whole.jsonl")
        with eventstore.open(tmp_path / "g.db") as journal:
            first = eventstore.ingest(journal, part)
            grown = eventstore.ingest(journal, whole)
        assert first.compactions == ()
        assert "not compacted" in first.warnings[-1]
        (review,) = grown.compactions
        assert (review.marker_status, review.not_evidenced) == ("emitted", ())
        stored = _payloads(tmp_path / "g.db")
        assert stored == _fresh(tmp_path, whole, like=stored)

    def test_a_cut_inside_one_api_message_is_completed(self, tmp_path: Path) -> None:
        """Read while Claude Code wrote one response's parts: once the file has grown,
        the part is retracted with a ``completed`` note and the whole response follows
        (the call it opens opened once); ``verify`` passes."""
        s = Script()
        s.user("go")
        s.assistant(s.text("Let me look."), s.tool_use("t1", "Read", file_path="/a"))
        whole = s.write(tmp_path / "whole.jsonl")
        part = tmp_path / "part.jsonl"
        part.write_text("".join(json.dumps(e) + "\n" for e in s.lines[:2]))
        with eventstore.open(tmp_path / "g.db") as journal:
            sid = eventstore.ingest(journal, part).session_id
            eventstore.ingest(journal, whole)
            assert verify(journal) == []
            assert list(journal.session(sid).state.open_calls) == ["t1"]
        kinds = [t for (t,) in rows(tmp_path / "g.db", "SELECT type FROM events ORDER BY seq")]
        assert kinds.count("TurnRetracted") == 1
        assert kinds.count("CallOpened") == 1

    def test_a_shorter_file_than_the_session_is_refused(self, tmp_path: Path) -> None:
        """An older copy of a transcript already ingested whole is not ingested."""
        s = _growing()
        whole = s.write(tmp_path / "whole.jsonl")
        part = tmp_path / "part.jsonl"
        part.write_text("".join(json.dumps(e) + "\n" for e in s.lines[:3]))
        with eventstore.open(tmp_path / "g.db") as journal:
            eventstore.ingest(journal, whole)
            with pytest.raises(eventstore.InvalidEvent, match="already holds more than"):
                eventstore.ingest(journal, part)

    def test_the_command_line_says_what_it_appended(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """ingest reports a grown session with the events it appended."""
        s = _growing()
        part = tmp_path / "part.jsonl"
        part.write_text("".join(json.dumps(e) + "\n" for e in s.lines[:5]))
        db = str(tmp_path / "g.db")
        assert main(["ingest", db, str(part)]) == 0
        first = capsys.readouterr().out.split(", ")[1]
        assert main(["ingest", db, str(s.write(tmp_path / "whole.jsonl")), "--json"]) == 0
        (result,) = json.loads(capsys.readouterr().out)
        assert result["appended_after"] == int(first.split()[0])
        assert main(["ingest", db, str(tmp_path / "whole.jsonl")]) == 0
        assert "unchanged (already ingested)" in capsys.readouterr().out


class TestConcurrentIngest:
    def test_losing_the_race_to_write_reports_unchanged(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Another process wrote the session after this one looked: unchanged, not an error."""
        path = _growing().write(tmp_path / "t.jsonl")
        loaded = _ingest.load(path)
        with (
            eventstore.open(tmp_path / "t.db") as mine,
            eventstore.open(tmp_path / "t.db") as other,
        ):
            looks = iter([False])  # it looked before the other wrote, then no more
            monkeypatch.setattr(mine, "has_session", lambda sid: next(looks, True))
            eventstore.ingest(other, path)
            result = _ingest.ingest_loaded(mine, loaded)
        assert (result.unchanged, result.appended_after) == (True, None)


class TestRepeatsAndGaps:
    def test_a_transcript_written_twice_ingests_as_once(self, tmp_path: Path) -> None:
        """cat s.jsonl s.jsonl: the same events as once, and no second, empty compaction."""
        s = _growing()
        once = s.write(tmp_path / "once.jsonl")
        twice = tmp_path / "twice.jsonl"
        twice.write_text(s.dump() * 2)
        with eventstore.open(tmp_path / "two.db") as journal:
            r = eventstore.ingest(journal, twice)
        stored = _payloads(tmp_path / "two.db")
        assert _content([p for p in stored if p[0] != "Noted"]) == _content(_fresh(tmp_path, once))
        (note,) = [json.loads(p[1]) for p in stored if p[0] == "Noted"]
        assert (note["kind"], note["line"]) == ("repeat", len(s.lines) + 1)
        (review,) = r.compactions
        assert review.marker_status == "emitted"

    def test_a_tool_use_without_an_id_is_a_warning_naming_its_line(self, tmp_path: Path) -> None:
        """The file ingests; the block is kept as text; its result is ignored, both named."""
        s = Script()
        s.user("go")
        s.assistant(s.tool_use("", "Bash", command="ls"))
        s.result("", "file.txt")
        journal, r = _run(tmp_path, s)
        assert r.calls == 0
        assert r.warnings == (
            "line 2: a Bash tool_use without an id is no call",
            "line 3: tool_result for , which is not an open call: ignored",
        )
        journal.close()

    def test_a_string_is_error_is_a_failure_with_a_warning(self, tmp_path: Path) -> None:
        """ "is_error": "true" is not success: a failed fact, and the line named."""
        s = Script()
        s.user("go")
        s.assistant(s.tool_use("t1", "Bash", command="rm -rf build"))
        s.result("t1", "Permission denied")["message"]["content"][0]["is_error"] = "true"
        journal, r = _run(tmp_path, s)
        assert (r.failed, list(journal.session("s-1").state.dispositions)) == (
            1,
            ["Bash: rm -rf build (line 3)"],
        )
        assert r.warnings[0].startswith("line 3: tool_result for t1 has is_error 'true'")
        journal.close()


class TestRuleKeys:
    def test_rules_sharing_a_long_start_keep_apart(self, tmp_path: Path) -> None:
        """Two rules with the same first 60 characters are two constraints; the summary
        quoting one evidences that one only."""
        a = "You must always run the whole test suite before you commit the parser changes."
        b = "You must always run the whole test suite before you commit the lexer changes."
        s = Script()
        s.user(f"{a} {b}")
        s.assistant(s.text("ok"), prompt=900)
        s.boundary(905, f"Rules: {a}")
        s.user("go")
        journal, r = _run(tmp_path, s)
        keys = sorted(journal.session("s-1").state.constraints)
        assert len(keys) == 2
        assert keys[0][:71] == keys[1][:71] == "heuristic: " + a[:60]
        (review,) = r.compactions
        assert [(o.detail, o.evidenced) for o in review.obligations] == [(a, True), (b, False)]
        journal.close()


class TestHostileFiles:
    @pytest.mark.parametrize(
        ("make", "error"),
        [
            ("bigint", "line 2: a number with more than 4,300 digits"),
            ("deep", "line 3: JSON nested deeper than 100 levels"),
            ("fifo", "a FIFO, not a regular file: not read"),
            ("zero", "a character device, not a regular file: not read"),
        ],
    )
    def test_one_error_line_and_exit_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], make: str, error: str
    ) -> None:
        """Hostile input is one line on standard error naming what is wrong; nothing made."""
        s = Script()
        s.user("go")
        s.assistant(s.tool_use("t1", "Bash", command="ls"), output=13)
        s.result("t1", "placeholder")
        s.user("ok")
        path = tmp_path / "t.jsonl"
        if make == "bigint":
            path.write_text(
                s.dump().replace('"output_tokens": 13', '"output_tokens": ' + "9" * 5000)
            )
        elif make == "deep":
            path.write_text(s.dump().replace('"placeholder"', "[" * 300 + "]" * 300))
        elif make == "fifo":
            os.mkfifo(path)
        else:
            path = Path("/dev/zero")
        db = tmp_path / "t.db"
        assert main(["ingest", str(db), str(path)]) == 2
        err = capsys.readouterr().err
        assert err == f"tierlog ingest: error: {path}: {error}" + err.split(error, 1)[1]
        assert err.count("\n") == 1
        assert not db.exists()

    def test_an_empty_journal_file_left_behind_is_usable(self, tmp_path: Path) -> None:
        """A journal created and killed before its first write (0 bytes) takes an ingest."""
        db = tmp_path / "killed.db"
        db.touch()
        assert main(["ingest", str(db), str(transcripts.SHORT)]) == 0
        assert main(["verify", str(db)]) == 0


def _given(block: str, hook: str = "SessionStart") -> dict[str, object]:
    return {"type": "hook_additional_context", "content": [block], "hookEvent": hook}


def _dropped() -> tuple[Script, str]:
    """A rule and a failed push, a compaction whose summary drops both, and the block that
    gives both back (as tierlog's SessionStart hook writes it)."""
    s = Script()
    s.user("Fix the parser. Never modify files under /etc.")
    s.assistant(s.tool_use("t1", "Bash", command="git push"), prompt=2_000, output=20)
    s.result("t1", "Exit code 128\nfatal: no upstream", error=True)
    s.boundary(2_030, "Worked on the parser.")
    with tempfile.TemporaryDirectory() as folder, eventstore.open(Path(folder) / "j.db") as j:
        sid = eventstore.ingest(j, s.write(Path(folder) / "t.jsonl")).session_id
        due = j.session(sid).retell(dry_run=True)
    assert due is not None
    return s, due.content


class TestRetold:
    def test_a_block_that_states_what_is_owed_is_the_re_tell(self, tmp_path: Path) -> None:
        """A hook's block after the summary, stating both: a re-tell turn with its Retold,
        nothing owed afterwards, and the journal verifies."""
        s, block = _dropped()
        s.entry("attachment", attachment=_given(block))
        s.assistant(s.text("Carrying on."), prompt=900)
        journal, result = _run(tmp_path, s)
        session = journal.session(result.session_id)
        retolds = [e for e in session.events() if isinstance(e, reducers.Retold)]
        assert len(retolds) == 1
        assert session.turns(retolds[0].index, retolds[0].index + 1)[0].content == block
        assert session.owed() == ()
        assert verify(journal) == []

    def test_a_block_cut_short_is_a_cut_re_tell(self, tmp_path: Path) -> None:
        """A block holding the first owed line only (cut at a limit): the re-tell of what
        fits in its length, which records the cut; the rest stays owed."""
        s, block = _dropped()
        header, rule, _push = block.split("\n")
        s.entry("attachment", attachment=_given(f"{header}\n{rule}"))
        s.assistant(s.text("Carrying on."), prompt=900)
        journal, result = _run(tmp_path, s)
        session = journal.session(result.session_id)
        (told,) = [e for e in session.events() if isinstance(e, reducers.Retold)]
        assert (told.cut, list(told.dispositions)) == (1, [])
        assert [o.kind for o in session.owed()] == ["negative_fact"]

    def test_a_block_that_skips_an_owed_line_is_a_plain_turn(self, tmp_path: Path) -> None:
        """A block without the first owed line: kept as the system turn the agent read, not
        a re-tell; both stay owed."""
        s, block = _dropped()
        header, _rule, push = block.split("\n")
        s.entry("attachment", attachment=_given(f"{header}\n{push}"))
        s.assistant(s.text("Carrying on."), prompt=900)
        journal, result = _run(tmp_path, s)
        session = journal.session(result.session_id)
        assert not [e for e in session.events() if isinstance(e, reducers.Retold)]
        assert [t.content for t in session.turns() if t.content.startswith(header)] == [
            f"{header}\n{push}"
        ]
        assert len(session.owed()) == 2

    def test_another_hooks_context_is_no_turn(self, tmp_path: Path) -> None:
        """Text another hook added (not tierlog's header) is passed through for the chain."""
        s, _ = _dropped()
        s.entry("attachment", attachment=_given("Remember the style guide.", "UserPromptSubmit"))
        s.assistant(s.text("Carrying on."), prompt=900)
        journal, result = _run(tmp_path, s)
        contents = [t.content for t in journal.session(result.session_id).turns()]
        assert "Remember the style guide." not in contents

    def test_ingesting_it_while_it_grows_gives_the_same_events(self, tmp_path: Path) -> None:
        """Cut before, at and after the block's line, then whole: the events equal a fresh
        ingest of the whole file (the re-tell decided at the same place)."""
        s, block = _dropped()
        s.entry("attachment", attachment=_given(block))
        s.assistant(s.text("Carrying on."), prompt=900)
        whole = s.write(tmp_path / "whole.jsonl")
        for cut in range(len(s.lines) - 3, len(s.lines)):
            part = tmp_path / f"part{cut}.jsonl"
            part.write_text("".join(json.dumps(e) + "\n" for e in s.lines[:cut]))
            with eventstore.open(tmp_path / f"g{cut}.db", synchronous="normal") as journal:
                eventstore.ingest(journal, part)
                eventstore.ingest(journal, whole)
            stored = _payloads(tmp_path / f"g{cut}.db")
            assert stored == _fresh(tmp_path, whole, like=stored), cut

    def test_reviews_can_be_left_out(self, tmp_path: Path) -> None:
        """``ingest_loaded(..., reviews=False)`` writes the same events and reviews nothing
        (the hooks' worker does not print them)."""
        s, _ = _dropped()
        path = s.write(tmp_path / "t.jsonl")
        with eventstore.open(tmp_path / "j.db") as journal:
            result = _ingest.ingest_loaded(journal, _ingest.load(path), reviews=False)
            assert result.compactions == ()
            assert len(eventstore.claude_code.review_session(journal, result.session_id)) == 1
        assert _payloads(tmp_path / "j.db") == _fresh(tmp_path, path)
