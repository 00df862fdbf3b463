"""The mapping of a Codex rollout onto journal steps, on hand-written lines and the fixture."""

from __future__ import annotations

from eventstore.codex import Boundary, Turn, build_plan, parse, read
from reducers import CallOpened, ConstraintStated, ItemDisposed
from tests.codex.conftest import FIXTURE
from tests.codex.lines import call, lines, msg, out, tokens


class TestPlan:
    def test_calls_failures_rules_and_interruptions(self) -> None:
        """A typed rule, a failed call named by its command's head, an interruption."""
        data = lines(
            msg("user", "Migrate orders. Never touch /etc."),
            call("c1", "git push origin main"),
            out("c1", "Process exited with code 1\nOutput:\nrejected: non-fast-forward"),
            ("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        )
        plan = build_plan(parse(data)).plan
        raised = [e for s in plan.steps if isinstance(s, Turn) for e in s.raised]
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

    def test_a_rule_in_french_is_read_as_claude_code_ingest_reads_it(self) -> None:
        """One heuristic for every integration: "jamais" states a rule here too."""
        data = lines(msg("user", "Ne touche jamais /etc. Merci."))
        turns = [s for s in build_plan(parse(data)).plan.steps if isinstance(s, Turn)]
        keys = [e.key for s in turns for e in s.raised if isinstance(e, ConstraintStated)]
        assert keys == ["heuristic: Ne touche jamais /etc."]

    def test_not_and_still_in_plain_sentences_state_no_rule(self) -> None:
        """German "nicht", "nie", "immer" and French "toujours" are also "not", "no",
        "still": a sentence that only says something does not work, or a Polish "nie"
        (before: each was a pending rule the summary had to carry)."""
        typed = (
            "Ich weiß nicht, warum der Test fehlschlägt. Das geht immer noch nicht."
            " Le test échoue toujours. Nie wiem, dlaczego test nie przechodzi."
        )
        data = lines(msg("user", typed))
        assert build_plan(parse(data)).plan.constraints == 0

    def test_not_and_always_in_an_instruction_state_a_rule(self) -> None:
        """With "bitte", a modal of obligation, an imperative or "!", they still do."""
        typed = (
            "Bitte nicht auf main pushen. Du darfst die Datei nicht ändern."
            " Verwende immer pnpm. Ändern Sie nie die Migrationen. Nicht pushen!"
            " Il faut toujours lancer les tests."
        )
        steps = build_plan(parse(lines(msg("user", typed)))).plan.steps
        found = [e for s in steps if isinstance(s, Turn) for e in s.raised]
        assert len(found) == 6
        assert all(isinstance(e, ConstraintStated) for e in found)

    def test_context_text_codex_adds_is_not_read_for_rules(self) -> None:
        """``<environment_context>`` and AGENTS.md text are user-role but not typed."""
        data = lines(msg("user", "<environment_context>never mind</environment_context>"))
        assert build_plan(parse(data)).plan.constraints == 0

    def test_a_token_count_prices_the_last_model_turn(self) -> None:
        """The model turn before a ``token_count`` gets its prompt and output beyond the
        turns before it, so occupancy is the call's; a count of 0 prices nothing."""
        data = lines(
            msg("user", "x" * 400), msg("assistant", "ok"), tokens(5_000, 20), tokens(0, 0)
        )
        steps = [s for s in build_plan(parse(data)).plan.steps if isinstance(s, Turn)]
        assert sum(s.tokens for s in steps) == 5_020

    def test_a_compaction_keeps_its_replacement_history(self) -> None:
        """``compacted`` is a boundary whose summary is the kept texts, and the
        developer instructions are left out; without a history, its message."""
        texts = [
            ("developer", "rules of the house"),
            ("user", "Never touch /etc."),
            ("user", "SUMMARY"),
        ]
        history = [msg(role, text)[1] for role, text in texts]
        data = lines(
            msg("user", "go"), tokens(900, 10),
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
        assert bound.occupancy == 7_120
