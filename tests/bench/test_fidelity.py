"""The fidelity simulator (bench/fidelity.py, bench/sim): its parts, and a quick run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import eventstore
from bench import fidelity
from bench.sim.arms import Baseline, Gated, Proposal, Retelling
from bench.sim.obligations import Obligation, context_tokens, held_keys
from bench.sim.runtime import hint_keys, plan_tier1
from bench.sim.summarizer import Summarizer
from bench.sim.sweep import SETTINGS
from bench.sim.workload import KEY, Op, Shape, TurnSpec, generate
from eventstore import UnrecoverableCompactionError, Violation
from reducers import Node, canonical_json

SHAPE = Shape(tokens=120_000, crashes=3)
TIGHT = SETTINGS[1]


def _ob(key: str, kind: str = "constraint", disposition: str = "") -> Obligation:
    return Obligation(kind=kind, key=key, position=0, disposition=disposition)


class TestWorkload:
    def test_same_seed_same_script(self) -> None:
        """A seed always writes the same script, and another seed another one."""
        assert generate(7, SHAPE) == generate(7, SHAPE)
        assert generate(7, SHAPE) != generate(8, SHAPE)

    def test_obligation_keys_are_written_into_their_turns(self) -> None:
        """Every op's key appears in the content of the turn that raises or settles it."""
        script = generate(3, SHAPE)
        ops = [(t, op) for t in script.turns for op in t.ops]
        assert ops
        assert all(op.key in KEY.findall(t.content) for t, op in ops)

    def test_each_obligation_is_raised_once(self) -> None:
        """Keys are minted once: no call opened, constraint stated or fact disposed twice."""
        raised = [op.key for t in generate(4, SHAPE).turns for op in t.ops if op.kind != "resolve"]
        lifted = [op.key for t in generate(4, SHAPE).turns for op in t.ops if op.kind == "lift"]
        assert len(set(raised) - set(lifted)) == len(raised) - len(lifted)

    def test_crash_points_and_length(self) -> None:
        """A script reaches its token length and crashes as often as its shape says."""
        script = generate(5, SHAPE)
        assert script.tokens >= SHAPE.tokens
        assert sum(t.crash_after for t in script.turns) == SHAPE.crashes


class TestSummarizer:
    def test_drop_zero_keeps_everything(self) -> None:
        """A lossless summarizer carries every obligation it sees."""
        seen = [_ob(f"con-{i:04d}") for i in range(50)]
        carried = Summarizer(drop=0.0, seed=1).summarize(seen, (1, 0, 10))
        assert carried.keys == {o.key for o in seen}

    def test_higher_drop_rate_drops_a_superset(self) -> None:
        """Draws are coupled across drop rates: what 10% keeps, 5% keeps too."""
        seen = [_ob(f"con-{i:04d}") for i in range(200)]
        low = Summarizer(drop=0.05, seed=2).summarize(seen, (1, 0, 10)).keys
        high = Summarizer(drop=0.10, seed=2).summarize(seen, (1, 0, 10)).keys
        assert high < low

    def test_hints_are_always_carried(self) -> None:
        """A must-carry hint survives even a summarizer that drops everything."""
        hint = _ob("neg-0001", "negative", "rejected")
        carried = Summarizer(drop=1.0, seed=3).summarize([_ob("con-0001"), hint], (1, 0, 9), [hint])
        assert carried.keys == {"neg-0001"}
        assert carried.dispositions == {"neg-0001": "rejected"}

    def test_negative_facts_are_dropped_more_often(self) -> None:
        """At the same rate, negative facts are lost about twice as often as constraints."""
        s = Summarizer(drop=0.2, seed=4)
        cons = [_ob(f"con-{i:04d}") for i in range(2000)]
        negs = [_ob(f"neg-{i:04d}", "negative", "failed") for i in range(2000)]
        kept_cons = len(s.summarize(cons, (1, 0, 5)).keys)
        kept_negs = len(s.summarize(negs, (1, 0, 5)).keys)
        assert 2000 - kept_negs > 1.5 * (2000 - kept_cons)


class TestJudge:
    def test_summary_lines_hold_their_carried_fields(self) -> None:
        """A summary holds the keys in its carried fields, not those in its text."""
        line = {
            "kind": "summary",
            "node_id": "n5",
            "summary": "mentions con-0009",
            "constraints": ["con-0001"],
            "dispositions": {"neg-0002": "failed"},
            "resolved_ids": ["call-0003"],
            "unresolved_ids": ["call-0004"],
        }
        held = held_keys(canonical_json(line).decode() + "\n")
        assert held == {"con-0001", "neg-0002", "call-0003", "call-0004"}

    def test_turn_lines_hold_the_keys_in_their_content(self) -> None:
        """Digest turns and raw-checkpoint turns hold what their content names."""
        digest = {
            "kind": "turn",
            "index": 0,
            "role": "user",
            "content": "never con-0007",
            "tokens": 4,
        }
        raw = {"index": 1, "role": "tool", "content": "call-0001 failed: neg-0000", "tokens": 9}
        text = "".join(canonical_json(x).decode() + "\n" for x in (digest, raw))
        assert held_keys(text) == {"con-0007", "call-0001", "neg-0000"}

    def test_context_tokens_count_turns_and_summary_nodes(self) -> None:
        """Tokens resumed are the turns' tokens plus each summary node's own count."""
        summary = {"kind": "summary", "node_id": "n1"}
        turn = {"kind": "turn", "content": "x", "tokens": 30}
        text = "".join(canonical_json(x).decode() + "\n" for x in (summary, turn))
        node = _node("n1", tokens=70)
        assert context_tokens(text, {"n1": node}) == 100


def _node(node_id: str, tokens: int) -> Node:
    return Node(
        node_id=node_id,
        tier=1,
        input_lo=0,
        input_hi=1,
        covers_lo=0,
        covers_hi=1,
        tail_start=1,
        summary="s",
        tokens=tokens,
        dispositions={},
        resolved_ids=(),
        unresolved_ids=(),
        constraints=(),
        replaces=(),
        version=1,
    )


def _turns() -> list[TurnSpec]:
    """A constraint in turn 0, then tool output: 100 + 10 x 5,000 tokens."""
    first = TurnSpec(
        role="user",
        content="never do con-0000",
        tokens=100,
        ops=(Op(kind="state", key="con-0000", detail="rule con-0000"),),
    )
    return [first, *(TurnSpec(role="tool", content=f"out {i}", tokens=5_000) for i in range(10))]


def _drop_everything(tail: int) -> Proposal:
    return Proposal(
        tier=1,
        input=(5_100, tail),
        covers=(0, tail),
        tail_start=tail,
        summary="tool output",
        tokens=300,
        dispositions={},
        unresolved_ids=(),
        constraints=(),
    )


class TestArms:
    def test_tierlog_refuses_what_the_baseline_commits(self, tmp_path: Path) -> None:
        """A summary that forgets a truncated constraint: tierlog refuses and spills it,
        the baseline commits it and no artifact holds the constraint any more."""
        journal = eventstore.open(tmp_path / "f.db", synchronous="normal")
        gated, base = Gated(journal, "s", TIGHT.config), Baseline(TIGHT.config)
        tail = 100 + 8 * 5_000
        for arm in (gated, base):
            for turn in _turns():
                arm.append(turn)
            arm.truncate(0, 5_100)
        with pytest.raises(UnrecoverableCompactionError) as refused:
            gated.compact(_drop_everything(tail))
        assert [v.rule for v in refused.value.violations] == ["C5"]
        assert any("con-0000" in keys for keys in gated.spill_keys())
        node = base.compact(_drop_everything(tail))
        assert node.live
        assert "con-0000" not in held_keys(base.tier_view())
        journal.close()

    def test_the_retell_arm_gives_back_what_the_baseline_loses(self) -> None:
        """The same lossy summary commits on both; the re-telling runtime's context holds
        the constraint again (one system turn), the baseline's does not."""
        base, retell = Baseline(TIGHT.config), Retelling(TIGHT.config)
        tail = 100 + 8 * 5_000
        for arm in (base, retell):
            for turn in _turns():
                arm.append(turn)
            arm.truncate(0, 5_100)
            arm.compact(_drop_everything(tail))
        assert "con-0000" not in held_keys(base.tier_view())
        assert "con-0000" in held_keys(retell.tier_view())
        assert retell.retells == 1  # after the truncation; the compaction owed nothing more
        assert retell.state.turns == base.state.turns + 1
        assert retell.retold_tokens == retell.state.tokens_in(
            retell.state.position_of_turn(11), retell.state.end
        )

    def test_both_arms_fold_to_the_same_state_without_decisions(self, tmp_path: Path) -> None:
        """Plain events give the same reduced state on the journal and on the baseline."""
        journal = eventstore.open(tmp_path / "f.db", synchronous="normal")
        gated, base = Gated(journal, "s", TIGHT.config), Baseline(TIGHT.config)
        for arm in (gated, base):
            arm.checkpoint()
            for turn in generate(9, SHAPE).turns[:60]:
                arm.append(turn)
        assert gated.state.sha256 == base.state.sha256
        assert gated.tier_view() == base.tier_view()
        journal.close()


class TestRuntime:
    def test_hints_are_the_keys_the_violations_name(self) -> None:
        """The re-summarize hints are read from the violation messages."""
        v = Violation(
            rule="M2", name="negative_fact_dropped", message="'neg-0003' (failed) is missing"
        )
        w = Violation(rule="C5", name="obligation_evicted", message="open call 'call-0012' was cut")
        assert hint_keys((v, w)) == {"neg-0003", "call-0012"}

    def test_plan_truncates_only_what_the_summarizer_cannot_read(self) -> None:
        """The plan keeps the tail and the floor, and cuts the oldest turns past the budget."""
        base = Baseline(TIGHT.config)
        base.checkpoint()
        for turn in _turns():
            base.append(turn)
        plan = plan_tier1(base.state, TIGHT)
        assert plan is not None
        assert base.state.end - plan.tail_start >= TIGHT.tail_min
        assert plan.cut is not None
        assert plan.cut[0] == 0
        assert plan.tail_start - plan.input_lo <= TIGHT.input_budget
        assert plan.input_lo <= plan.tail_start - TIGHT.floor


@pytest.fixture(name="quick", scope="module")
def _quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("fidelity") / "quick.json"
    fidelity.main(["--quick", "--jobs", "1", "--out", str(out)])
    return out, json.loads(out.read_text())


class TestQuickRun:
    def test_same_seed_gives_byte_identical_json(
        self, quick: tuple[Path, dict[str, Any]], tmp_path: Path
    ) -> None:
        """Two quick runs (one in worker processes) write the same bytes, with an SVG."""
        again = tmp_path / "again.json"
        fidelity.main(
            ["--quick", "--jobs", "2", "--out", str(again), "--svg", str(tmp_path / "c.svg")]
        )
        assert again.read_bytes() == quick[0].read_bytes()
        assert (tmp_path / "c.svg").read_text().startswith("<svg")

    def test_the_gated_arm_never_diverges_nor_loses_an_obligation(
        self, quick: tuple[Path, dict[str, Any]]
    ) -> None:
        """tierlog's divergent resumes and unexplained violations are zero in every cell."""
        rows = [r for r in quick[1]["rows"] if r["arm"] == "tierlog"]
        assert rows
        assert all(r["resumes"] for r in rows)
        assert [r["divergent_resumes"] for r in rows] == [0] * len(rows)
        assert [r["unexplained_violations"] for r in rows] == [0] * len(rows)

    def test_a_runtime_that_falls_back_never_diverges_either(
        self, quick: tuple[Path, dict[str, Any]]
    ) -> None:
        """Without re-summarizing after MarkerInvalid, resumes fall back but never diverge,
        and each refused marker's spill explains what its node dropped."""
        rows = [r for r in quick[1]["rows"] if r["arm"] == "tierlog-fallback"]
        assert sum(r["raw_fallbacks"] for r in rows) > 0
        assert [r["divergent_resumes"] for r in rows] == [0] * len(rows)
        assert [r["unexplained_violations"] for r in rows] == [0] * len(rows)

    def test_the_retell_arm_pays_tokens_for_what_it_gives_back(
        self, quick: tuple[Path, dict[str, Any]]
    ) -> None:
        """Where the baseline loses obligations, the re-telling runtime re-tells (and pays
        tokens for it) and loses fewer."""
        rows = {(r["setting"], r["drop_rate"], r["arm"]): r for r in quick[1]["rows"]}
        lossy = [k for k in rows if k[2] == "baseline" and rows[k]["absent_obligations"]]
        assert lossy
        for setting, drop, _ in lossy:
            base, retell = rows[(setting, drop, "baseline")], rows[(setting, drop, "retell")]
            assert retell["retells"] > 0
            assert retell["retold_tokens"] > 0
            assert retell["absent_obligations"] < base["absent_obligations"]

    def test_the_baseline_loses_more_as_the_drop_rate_grows(
        self, quick: tuple[Path, dict[str, Any]]
    ) -> None:
        """In each setting the baseline loses more at the highest drop rate than at none."""
        for setting in {r["setting"] for r in quick[1]["rows"]}:
            base = sorted(
                (r for r in quick[1]["rows"] if r["setting"] == setting and r["arm"] == "baseline"),
                key=lambda r: r["drop_rate"],
            )
            assert base[-1]["absent_obligations"] > base[0]["absent_obligations"]
            assert base[-1]["unexplained_violations"] > base[0]["unexplained_violations"]
