"""The Codex rollout reader and its mapping, on hand-written lines and the CLI fixture."""

from __future__ import annotations

import json
from typing import Any

import pytest

from eventstore.claude_code._plan import Draft
from eventstore.claude_code._transcript import Boundary
from eventstore.codex import (
    Compaction,
    Message,
    Output,
    build_plan,
    parse,
    read,
)
from reducers import CallOpened, ConstraintStated, InvalidEvent, ItemDisposed
from tests.codex.conftest import FIXTURE

META = {"id": "s-1", "cli_version": "0.0.0-hand-written", "cwd": "/work"}
OK = b'{"type": "session_meta", "payload": {"id": "s"}}\n'


def _lines(*rows: tuple[str, dict[str, Any]]) -> bytes:
    """Hand-written rollout lines (the shape Codex writes: timestamp, type, payload)."""
    rows = (("session_meta", META), *rows)
    out = [{"timestamp": "2026-01-01T00:00:00Z", "type": t, "payload": p} for t, p in rows]
    return b"".join(json.dumps(o).encode() + b"\n" for o in out)


def _msg(role: str, text: str) -> tuple[str, dict[str, Any]]:
    kind = "output_text" if role == "assistant" else "input_text"
    content = [{"type": kind, "text": text}]
    return "response_item", {"type": "message", "role": role, "content": content}


def _call(call_id: str, cmd: str) -> tuple[str, dict[str, Any]]:
    args = json.dumps({"cmd": cmd})
    payload = {"type": "function_call", "name": "exec_command", "arguments": args}
    return "response_item", {**payload, "call_id": call_id}


def _out(call_id: str, text: str) -> tuple[str, dict[str, Any]]:
    return "response_item", {"type": "function_call_output", "call_id": call_id, "output": text}


def _tokens(prompt: int, output: int) -> tuple[str, dict[str, Any]]:
    last = {"input_tokens": prompt, "output_tokens": output}
    return "event_msg", {"type": "token_count", "info": {"last_token_usage": last}}


class TestRead:
    def test_the_cli_fixture_reads_whole(self) -> None:
        """The fixture the real CLI wrote: its items counted by hand."""
        rollout = read(FIXTURE)
        assert rollout.cli_version == "0.171.0"
        kinds = [type(i).__name__ for i in rollout.items]
        assert kinds.count("Call") == 3
        assert kinds.count("Output") == 3
        assert kinds.count("Compaction") == 1
        assert kinds.count("Aborted") == 1
        outputs = [i for i in rollout.items if isinstance(i, Output)]
        assert [(o.failed, o.exit_code, o.source) for o in outputs] == [
            (True, 1, "item_completed"),
            (False, 0, "item_completed"),
            (True, 2, "item_completed"),
        ]
        (compaction,) = [i for i in rollout.items if isinstance(i, Compaction)]
        assert compaction.kept is not None
        assert "Never modify files under /etc." in compaction.kept[1]

    def test_an_exit_code_event_decides_over_the_output_text(self) -> None:
        """``exec_command_end`` says how a call ended; the text is read only without it."""
        end = ("event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 3})
        second = [_call("c2", "ls"), _out("c2", "Process exited with code 2\nboom")]
        data = _lines(_call("c1", "make"), end, _out("c1", "Exit code: 0"), *second)
        outputs = [i for i in parse(data).items if isinstance(i, Output)]
        assert [(o.failed, o.exit_code, o.source) for o in outputs] == [
            (True, 3, "exec_command_end"),
            (True, 2, "output_text"),
        ]

    def test_unknown_types_are_notes_with_counts(self) -> None:
        """A line type, item or event the reader does not know is passed over, noted."""
        odd = ("response_item", {"type": "web_search_call"})
        data = _lines(odd, ("mystery", {}), odd, ("event_msg", {"type": "new_thing"}))
        notes = {(n.kind, n.text, n.line, n.count) for n in parse(data).notes}
        assert notes == {
            ("unknown_type", "response_item 'web_search_call': passed over", 2, 2),
            ("unknown_type", "line type 'mystery': passed over", 3, 1),
            ("unknown_type", "event_msg 'new_thing': passed over", 5, 1),
        }

    def test_a_cut_last_line_is_a_note(self) -> None:
        """A last line cut off mid-write is skipped with a note; the rest is read."""
        data = _lines(_msg("user", "hello")) + b'{"type": "respon'
        rollout = parse(data)
        assert [type(i) for i in rollout.items] == [Message]
        assert [(n.kind, n.line) for n in rollout.notes] == [("cut_last_line", 3)]

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            (b'{"type": "event_msg", "payload": {}}\n', "no session_meta line"),
            (b'{"type": "session_meta", "payload": {"id": "a b"}}\n', "not a session id"),
            (b'{"type": "session_meta", "payload": {"id": "s"}}\nnope\n{}\n', "line 2: not JSON"),
            (
                b'{"type": "session_meta", "payload": {"id": "s"}}\n[1]\n{}\n',
                "line 2: not a rollout",
            ),
            (b"\xff\xfe\n{}\n", "line 1: not UTF-8"),
        ],
    )
    def test_unsound_input_is_refused_naming_the_line(self, data: bytes, message: str) -> None:
        """What is not a rollout raises InvalidEvent saying where and why."""
        with pytest.raises(InvalidEvent, match=message):
            parse(data)


class TestPlan:
    def test_calls_failures_rules_and_interruptions(self) -> None:
        """A typed rule, a failed call named by its command's head, an interruption."""
        data = _lines(
            _msg("user", "Migrate orders. Never touch /etc."),
            _call("c1", "git push origin main"),
            _out("c1", "Process exited with code 1\nOutput:\nrejected: non-fast-forward"),
            ("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        )
        plan = build_plan(parse(data)).plan
        raised = [e for s in plan.steps if isinstance(s, Draft) for e in s.raised]
        assert (
            ConstraintStated(key="heuristic: Never touch /etc.", text="Never touch /etc.") in raised
        )
        assert CallOpened(call_id="c1", kind="tool_call", name="exec_command: git push") in raised
        failed = [e for e in raised if isinstance(e, ItemDisposed)]
        assert [(f.key, f.disposition) for f in failed] == [
            ("exec_command: git push", "failed"),
            ("interrupted: exec_command: git push", "rejected"),
        ]
        assert "exit code 1: rejected: non-fast-forward" in failed[0].reason

    def test_context_text_codex_adds_is_not_read_for_rules(self) -> None:
        """``<environment_context>`` and AGENTS.md text are user-role but not typed."""
        data = _lines(_msg("user", "<environment_context>never mind</environment_context>"))
        assert build_plan(parse(data)).plan.constraints == 0

    def test_a_token_count_prices_the_last_model_turn(self) -> None:
        """The model turn before a ``token_count`` gets its prompt and output beyond the
        turns before it, so occupancy is the call's; a count of 0 prices nothing."""
        data = _lines(
            _msg("user", "x" * 400), _msg("assistant", "ok"), _tokens(5_000, 20), _tokens(0, 0)
        )
        steps = [s for s in build_plan(parse(data)).plan.steps if isinstance(s, Draft)]
        assert sum(s.tokens for s in steps) == 5_020

    def test_a_compaction_keeps_its_replacement_history(self) -> None:
        """``compacted`` is a boundary whose summary is the kept texts, and the
        developer instructions are left out; without a history, its message."""
        texts = [
            ("developer", "rules of the house"),
            ("user", "Never touch /etc."),
            ("user", "SUMMARY"),
        ]
        history = [_msg(role, text)[1] for role, text in texts]
        data = _lines(
            _msg("user", "go"), _tokens(900, 10),
            ("compacted", {"message": "SUMMARY", "replacement_history": history}),
            ("compacted", {"message": "older CLI summary"}),
        )  # fmt: skip
        mapped = build_plan(parse(data))
        bounds = [s for s in mapped.plan.steps if isinstance(s, Boundary)]
        assert [b.summary for b in bounds] == ["Never touch /etc.\n\nSUMMARY", "older CLI summary"]
        assert {n.kind for n in mapped.notes} == {"compaction_input", "no_replacement_history"}

    def test_the_cli_fixture_maps_to_hand_counted_steps(self) -> None:
        """The fixture: 18 turns, 3 calls of which 2 failed, 1 rule, 1 interruption,
        one compaction at occupancy 7,120 (the last priced call: 7,100 + 20)."""
        plan = build_plan(read(FIXTURE)).plan
        assert (plan.turns, plan.calls, plan.failed) == (18, 3, 2)
        assert (plan.constraints, plan.interruptions, plan.open) == (1, 1, set())
        (bound,) = [s for s in plan.steps if isinstance(s, Boundary)]
        assert bound.pre_tokens == 7_120
