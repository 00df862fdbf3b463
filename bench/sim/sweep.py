"""The sweep: drop rates x settings x arms on the same seeds, and its JSON.

Each cell (one setting, one drop rate) plays the same session scripts on both
arms; cells are independent, so they run in worker processes and the results
are put back in cell order. Nothing in the JSON depends on time or paths.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import attrs

import eventstore
from bench.sim.arms import Baseline, Gated, Retelling
from bench.sim.runtime import Runtime, Setting, Tally
from bench.sim.summarizer import Summarizer
from bench.sim.workload import Shape, generate

SETTINGS = (
    Setting(
        name="200k/160k",
        window=200_000,
        trigger=160_000,
        floor=24_000,
        input_budget=135_000,
        tail_min=16_000,
        fold_after=3,
    ),
    Setting(
        name="64k/48k",
        window=64_000,
        trigger=48_000,
        floor=8_000,
        input_budget=40_000,
        tail_min=6_000,
        fold_after=3,
    ),
)
DROP_RATES = (0.0, 0.05, 0.10, 0.20, 0.40)
#: The arms, in row order: the ungated baseline; the baseline re-telling what its
#: context owes after each truncation and compaction; tierlog with a runtime that
#: re-summarizes once after any refusal; tierlog with one that re-summarizes after a
#: compaction refusal (it must, to compact at all) but lives with a marker's fallback
#: (each marker refusal spills the turns holding what its node dropped).
ARMS = ("baseline", "retell", "tierlog", "tierlog-fallback")


@attrs.frozen(kw_only=True)
class Plan:
    """What to run: seeds, sessions per cell, their shape, the grid."""

    seed: int
    sessions: int
    shape: Shape
    drop_rates: tuple[float, ...] = DROP_RATES
    settings: tuple[Setting, ...] = SETTINGS

    def seeds(self) -> range:
        """The session seeds every cell plays."""
        base = self.seed * 1_000_000
        return range(base, base + self.sessions)

    def cells(self) -> Iterator[Cell]:
        for setting in self.settings:
            for drop in self.drop_rates:
                yield Cell(setting=setting, drop=drop, plan=self)


@attrs.frozen(kw_only=True)
class Cell:
    """One setting at one drop rate."""

    setting: Setting
    drop: float
    plan: Plan


@attrs.frozen(kw_only=True)
class Row:
    """One row of ``fidelity.json``: one setting, drop rate and arm."""

    setting: str
    drop_rate: float
    arm: str
    tally: Tally

    def to_json(self) -> dict[str, Any]:
        t = self.tally
        return {
            "setting": self.setting,
            "drop_rate": self.drop_rate,
            "arm": self.arm,
            **attrs.asdict(t),
            "divergence_rate": _rate(t.divergent_resumes, t.resumes),
            "fallback_rate": _rate(t.raw_fallbacks, t.resumes),
            "resumed_tokens_mean": round(t.resumed_tokens / t.resumes) if t.resumes else 0,
        }


def _rate(n: int, d: int) -> float:
    return round(n / d, 4) if d else 0.0


def scratch() -> str | None:
    """Where the journals go: memory (``/dev/shm``) when there is one; this measures
    decisions, and a disk would only add gigabytes of WAL writes to wait for."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def run_cell(cell: Cell) -> tuple[Row, ...]:
    """Every arm of one cell, on the same scripts; the tierlog arms in a fresh journal."""
    tallies = {arm: Tally() for arm in ARMS}
    config, setting = cell.setting.config, cell.setting
    with tempfile.TemporaryDirectory(prefix="tierlog-fidelity-", dir=scratch()) as tmp:
        journal = eventstore.open(Path(tmp) / "fidelity.db", synchronous="normal")
        try:
            for seed in cell.plan.seeds():
                script = generate(seed, cell.plan.shape)
                summarizer = Summarizer(drop=cell.drop, seed=seed)
                base = Baseline(config)
                Runtime(base, setting, summarizer, tallies["baseline"]).run(script)
                retell = Retelling(config)
                Runtime(retell, setting, summarizer, tallies["retell"]).run(script)
                gated = Gated(journal, f"s{seed}", config)
                Runtime(gated, setting, summarizer, tallies["tierlog"]).run(script)
                gated = Gated(journal, f"f{seed}", config, name="tierlog-fallback")
                tally = tallies["tierlog-fallback"]
                Runtime(gated, setting, summarizer, tally, remark=False).run(script)
        finally:
            journal.close()
    return tuple(
        Row(setting=setting.name, drop_rate=cell.drop, arm=arm, tally=tallies[arm]) for arm in ARMS
    )


def run(plan: Plan, jobs: int = 1) -> list[Row]:
    """Every cell of ``plan``, in order; ``jobs`` worker processes."""
    cells = list(plan.cells())
    if jobs <= 1:
        pairs = [run_cell(c) for c in cells]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            pairs = list(pool.map(run_cell, cells))
    return [row for pair in pairs for row in pair]


def to_json(plan: Plan, rows: list[Row]) -> str:
    """The results as canonical JSON text (sorted keys): same plan, same bytes."""
    doc = {
        "seed": plan.seed,
        "sessions_per_cell": plan.sessions,
        "session_tokens": plan.shape.tokens,
        "crashes_per_session": plan.shape.crashes,
        "drop_rates": list(plan.drop_rates),
        "settings": [attrs.asdict(s) for s in plan.settings],
        "rows": [r.to_json() for r in rows],
    }
    return json.dumps(doc, sort_keys=True, indent=2) + "\n"
