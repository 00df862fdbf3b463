"""The results as a Markdown table (what the README publishes) and a few sentences."""

from __future__ import annotations

from collections.abc import Sequence

from bench.sim.sweep import Row

HEAD = (
    "| setting | drop | arm | resumes | divergent | absent keys | raw fallbacks "
    "| compactions | refusals C/M | re-summaries | spills | unexplained | tokens/resume "
    "| re-tells | re-told tokens | spilled MB |"
)


def _pct(n: int, d: int) -> str:
    return f"{n} ({n / d:.1%})" if d else str(n)


def table(rows: Sequence[Row]) -> str:
    """One Markdown line per row, under a header."""
    lines = [HEAD, "|" + "---|" * (HEAD.count("|") - 1)]
    for r in rows:
        t, j = r.tally, r.to_json()
        lines.append(
            f"| {r.setting} | {r.drop_rate:.0%} | {r.arm} | {t.resumes} "
            f"| {_pct(t.divergent_resumes, t.resumes)} | {t.absent_obligations} "
            f"| {_pct(t.raw_fallbacks, t.resumes)} | {t.compactions} "
            f"| {t.compaction_refusals}/{t.marker_refusals} | {t.resummaries} | {t.spills} "
            f"| {t.unexplained_violations} | {j['resumed_tokens_mean']:,} "
            f"| {t.retells} | {t.retold_tokens:,} | {t.spilled_bytes / 1e6:,.1f} |"
        )
    return "\n".join(lines) + "\n"


def fallback_cost(rows: Sequence[Row]) -> list[str]:
    """Per setting: raw fallbacks per resume of each arm, over all drop rates."""
    out = []
    for setting in dict.fromkeys(r.setting for r in rows):
        parts = []
        for arm in dict.fromkeys(r.arm for r in rows):
            mine = [r.tally for r in rows if r.setting == setting and r.arm == arm]
            resumes = sum(t.resumes for t in mine)
            falls = sum(t.raw_fallbacks for t in mine)
            parts.append(f"{arm} {falls}/{resumes} ({falls / resumes:.1%})" if resumes else arm)
        out.append(f"{setting}: raw fallbacks per resume: " + ", ".join(parts))
    return out
