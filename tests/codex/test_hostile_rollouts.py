"""Rollouts of other shapes than Codex 0.171 writes, and rollouts that change between
ingests: what tierlog passes over or assumes is a ``Noted`` event, never silent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import eventstore
from eventstore import Journal
from eventstore.cli import main
from eventstore.codex import ingest, is_rollout, read
from reducers import InvalidEvent, Noted
from tests.codex.lines import call, lines, msg, out

SESSION = "s-1"  # tests.codex.lines.META's id


@pytest.fixture(name="journal")
def _journal(tmp_path: Path) -> Iterator[Journal]:
    with eventstore.open(tmp_path / "agent.db") as journal:
        yield journal


def _write(path: Path, *rows: tuple[str, dict[str, Any]]) -> Path:
    path.write_bytes(lines(*rows))
    return path


def _noted(journal: Journal) -> list[tuple[str, int | None, int]]:
    events = journal.session(SESSION).events()
    return [(e.kind, e.line, e.count) for e in events if isinstance(e, Noted)]


ENCRYPTED = ("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"})
UNKNOWN = ("response_item", {"type": "web_search_call", "status": "completed"})


class TestGrownRollout:
    def test_the_notes_of_the_part_a_rollout_grew_by_are_recorded(
        self, journal: Journal, tmp_path: Path
    ) -> None:
        """Lines a live rollout gained after the first ingest that tierlog passes over
        are noted in the journal, though no new turn follows them."""
        start = [msg("user", "Fix the build."), call("c1", "make")]
        path = _write(tmp_path / "r.jsonl", *start)
        assert ingest(journal, path).notes == ()
        _write(path, *start, UNKNOWN, ENCRYPTED)
        grown = ingest(journal, path)
        assert not grown.unchanged
        assert _noted(journal) == [("unknown_type", 4, 1), ("reasoning_unread", 5, 1)]
        assert ingest(journal, path).unchanged

    def test_a_note_whose_count_grew_is_recorded_again(
        self, journal: Journal, tmp_path: Path
    ) -> None:
        """A note that folds several lines is recorded again when the rollout adds one."""
        start = [msg("user", "Fix the build."), ENCRYPTED, msg("assistant", "On it.")]
        path = _write(tmp_path / "r.jsonl", *start)
        ingest(journal, path)
        _write(path, *start, ENCRYPTED, call("c1", "make"), out("c1", "Exit code: 0"))
        ingest(journal, path)
        assert [n for n in _noted(journal) if n[0] == "reasoning_unread"] == [
            ("reasoning_unread", 3, 1),
            ("reasoning_unread", 3, 2),
        ]

    def test_an_older_shorter_copy_is_refused_saying_so(
        self, journal: Journal, tmp_path: Path
    ) -> None:
        """A rollout that is the start of the stored session (an older copy, or one cut
        short) is refused as that, not as "other content", and nothing is written."""
        start = [msg("user", "Fix the build."), call("c1", "make")]
        path = _write(tmp_path / "r.jsonl", *start, out("c1", "Exit code: 0"))
        events = ingest(journal, path).events
        _write(path, *start)
        with pytest.raises(InvalidEvent, match=r"already holds 4 turns, .* gives 3 of them"):
            ingest(journal, path)
        assert journal.recorder.head(SESSION).version == events


class TestCompactionShapes:
    def test_an_encrypted_summary_is_noted(self, journal: Journal, tmp_path: Path) -> None:
        """A remote compaction (the OpenAI provider's) keeps its summary encrypted in
        ``replacement_history``: the review judges the kept messages alone, and says so."""
        kept = [msg("user", "Fix the build.")[1], {"type": "compaction", "encrypted_content": "x"}]
        path = _write(
            tmp_path / "r.jsonl",
            msg("user", "Fix the build."),
            call("c1", "make"),
            out("c1", "Exit code: 2"),
            ("compacted", {"message": "", "replacement_history": kept}),
        )
        result = ingest(journal, path)
        assert "summary_encrypted" in [n.kind for n in result.notes]
        assert ("summary_encrypted", 5, 1) in _noted(journal)
        (review,) = result.compactions
        assert [o.key for o in review.not_evidenced] == ["exec_command: make"]


def _tokens(prompt: object, output: object = 10, **info: object) -> tuple[str, dict[str, Any]]:
    last = {"input_tokens": prompt, "output_tokens": output}
    return "event_msg", {"type": "token_count", "info": {"last_token_usage": last, **info}}


class TestTokenCounts:
    @pytest.mark.parametrize("prompt", [-5, 1.5, True, "900", 10**12, None])
    def test_a_count_that_is_no_token_count_is_noted(
        self, prompt: object, journal: Journal, tmp_path: Path
    ) -> None:
        """A ``token_count`` whose counts are negative, fractional, boolean, text or past
        any window prices nothing, and a note says it was passed over."""
        path = _write(tmp_path / "r.jsonl", msg("assistant", "Done."), _tokens(prompt))
        ingest(journal, path)
        assert _noted(journal) == [("token_count_unread", 3, 1)]

    @pytest.mark.parametrize("window", [-5, 0, 10**30, "272000", 1.5])
    def test_a_window_that_is_no_window_is_noted_not_fatal(
        self, window: object, journal: Journal, tmp_path: Path
    ) -> None:
        """A ``model_context_window`` no session can take is passed over, noted; the
        rollout is ingested with the default window, its prompt count still read."""
        path = _write(
            tmp_path / "r.jsonl",
            msg("assistant", "Done."),
            _tokens(9_000, model_context_window=window),
        )
        ingest(journal, path)
        assert _noted(journal) == [("window_unread", 3, 1)]
        (note,) = [e for e in journal.session(SESSION).events() if isinstance(e, Noted)]
        assert note.text.count("passed over") == 1
        state = journal.session(SESSION).state
        assert state.config is not None
        assert state.config.window_tokens == 272_000
        assert state.occupancy >= 9_000

    def test_a_token_count_without_info_is_a_rate_limit_update(
        self, journal: Journal, tmp_path: Path
    ) -> None:
        """``info: null`` is what Codex writes with rate limits alone: nothing to note."""
        rate: tuple[str, dict[str, Any]] = ("event_msg", {"type": "token_count", "info": None})
        ingest(journal, _write(tmp_path / "r.jsonl", msg("assistant", "Done."), rate))
        assert _noted(journal) == []


class TestDetect:
    def test_a_session_meta_line_past_the_sniff_is_still_a_rollout(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Base instructions of 2 MB make a first line longer than the sniff reads: the
        line's start still says ``session_meta`` (it was taken for a Claude Code transcript)."""
        meta = {"id": SESSION, "base_instructions": {"text": "x" * 2**21}}
        path = _write(tmp_path / "r.jsonl", ("session_meta", meta), msg("user", "hi"))
        path.write_bytes(path.read_bytes().split(b"\n", 1)[1])  # lines() adds its own META
        assert is_rollout(path)
        assert main(["ingest", str(tmp_path / "agent.db"), str(path)]) == 0
        assert "(Codex rollout)" in capsys.readouterr().out

    def test_a_directory_is_not_a_rollout(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Sniffing a directory answers no (it raised IsADirectoryError, which the CLI
        printed as ``3: Is a directory``); ingest then says what the path is."""
        folder = tmp_path / "rollout.jsonl"
        folder.mkdir()
        assert not is_rollout(folder)
        assert main(["ingest", str(tmp_path / "agent.db"), str(folder)]) == 2
        assert "a directory, not a regular file" in capsys.readouterr().err


class TestText:
    @pytest.mark.parametrize(
        "row",
        [
            msg("assistant", "ok \ud800"),
            ("compacted", {"message": "sum \ud800"}),
            ("session_meta", {"id": "s-2", "cli_version": "\udcff"}),
        ],
    )
    def test_a_lone_surrogate_is_refused_naming_its_line(
        self, row: tuple[str, dict[str, Any]], tmp_path: Path
    ) -> None:
        """An escaped lone surrogate (no Codex writes one) is refused at its line, before
        anything is written; the error named no line when the journal refused it."""
        path = _write(tmp_path / "r.jsonl", row, msg("user", "after"))
        with eventstore.open(tmp_path / "agent.db") as journal:
            with pytest.raises(InvalidEvent, match="line 2: a lone surrogate is not text"):
                ingest(journal, path)
            assert not journal.has_session(SESSION)

    def test_a_last_line_with_a_lone_surrogate_is_not_taken_for_a_cut_one(
        self, tmp_path: Path
    ) -> None:
        """A whole last line is not a line cut mid-write: its lone surrogate is refused too."""
        path = _write(tmp_path / "r.jsonl", msg("user", "hi"), msg("assistant", "ok \ud800"))
        with pytest.raises(InvalidEvent, match="line 3: a lone surrogate is not text"):
            read(path)


def _said(role: object, text: str) -> tuple[str, dict[str, Any]]:
    return "response_item", {"type": "message", "role": role, "content": text}


class TestRoles:
    def test_a_role_codex_does_not_write_is_read_as_system_noted(
        self, journal: Journal, tmp_path: Path
    ) -> None:
        """Messages of role ``tool``, none or a list are ``system`` turns, one note a role."""
        path = _write(
            tmp_path / "r.jsonl",
            _said("tool", "a"),
            _said(None, "b"),
            _said("tool", "c"),
            _said(["x"], "d"),
        )
        ingest(journal, path)
        assert _noted(journal) == [
            ("unknown_role", 2, 2),
            ("unknown_role", 3, 1),
            ("unknown_role", 5, 1),
        ]
        roles = [t.role for t in journal.session(SESSION).turns()]
        assert roles == ["system"] * 5


class TestSessionMeta:
    def test_a_session_meta_of_another_session_is_noted(
        self, journal: Journal, tmp_path: Path
    ) -> None:
        """A second ``session_meta`` naming another session (a forked rollout holds its
        parent's) is noted; the first names the session, as before."""
        parent = ("session_meta", {"id": "parent-1", "cli_version": "0.171.0"})
        again = ("session_meta", {"id": SESSION, "cli_version": "0.171.0"})
        path = _write(tmp_path / "r.jsonl", parent, msg("user", "hi"), again)
        assert ingest(journal, path).session_id == SESSION
        assert _noted(journal) == [("other_session_meta", 2, 1)]


class TestCalls:
    def test_a_call_without_an_id_is_named_by_its_line_noted(
        self, journal: Journal, tmp_path: Path
    ) -> None:
        """A call with neither ``call_id`` nor ``id`` opens ``line-N``, and a note says so."""
        bare = ("response_item", {"type": "function_call", "name": "exec_command"})
        ingest(journal, _write(tmp_path / "r.jsonl", bare))
        assert list(journal.session(SESSION).state.open_calls) == ["line-2"]
        assert _noted(journal) == [("call_without_id", 2, 1)]
        (note,) = ingest(journal, tmp_path / "r.jsonl").notes
        assert "passed over" not in note.text
