"""The labelled evidence corpus, and the precision and recall of "not evidenced" against it.

Each case is one compaction with a summary: the one Claude Code resumed from
(``summary=None``), or one written by hand for the case. The transcripts are the
project's own (the CLI fixtures of ``tests/data/claude-code``) and, where they are
beside the clone, the real sessions of ``../shared/data/claude-code`` (never
committed; their labels, in ``corpus_real``, name an attempt by its line). For every
obligation live at that compaction the case holds a verdict a person gave by reading
the transcript and the summary:

- ``kept``: the summary states the rule or the failed attempt in substance;
- ``re-sent``: it does not, but Claude Code re-sent the file the rule comes from
  (CLAUDE.md) right after the boundary, before its first reply;
- ``verbatim``: it does not, but the turn that raised it is one Claude Code kept
  verbatim after the summary;
- ``partial``: it mentions the thing but not what matters (a command without its
  failure, a file without the rule);
- ``absent``.

An attempt resolved later is no obligation and has no label. The review's "not
evidenced" is right when the verdict is ``partial`` or ``absent`` (the context Claude
Code resumed from does not hold it), wrong otherwise. A case we still get wrong keeps
its honest label and counts as an error. Run it with ``make evidence-claude-code``
(``python -m tests.claude_code.corpus``): it prints the table published in
docs/claude-code.md and every case it gets wrong.
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import attrs

import eventstore
from eventstore._ops import carried_by
from eventstore.claude_code._review import CompactionReview, ObligationReview
from reducers import SessionState
from tests import transcripts
from tests.claude_code import corpus_labels, corpus_real

KEPT, PARTIAL, ABSENT = "kept", "partial", "absent"
RESENT, VERBATIM = "re-sent", "verbatim"  # not in the summary, but in the resumed context

_LINE = re.compile(r" \(line \d+\)$")
_AT = re.compile(r"\((line \d+)\)$")


@attrs.frozen(kw_only=True)
class Case:
    """One compaction, a summary (``None``: the transcript's own) and the hand verdicts."""

    name: str
    fixture: Path
    boundary: int
    summary: str | None
    labels: Mapping[str, str]
    reasons: Mapping[str, str] = attrs.field(factory=dict)  # why, for a transcript's own
    by_line: bool = False  # an attempt's label is named "line N" (a real session's)


def _v20(labels: Mapping[str, str], boundary: int) -> dict[str, str]:
    """The labels without CLAUDE.md's rules: 2.0.77 does not put CLAUDE.md in the
    transcript (nor keeps turns verbatim after its summary)."""
    return {k: v for k, v in labels.items() if not k.startswith("CLAUDE.md: ")}


def _v21(labels: Mapping[str, str], boundary: int) -> dict[str, str]:
    """The labels of the 2.1.332 fixture: what its summaries drop of CLAUDE.md, Claude
    Code re-sent after each boundary; the German rule, typed in the last turn before
    the auto compaction, is one of the turns it kept verbatim."""
    out = dict(labels)
    for k, v in labels.items():
        if v != KEPT and k.startswith("CLAUDE.md: "):
            out[k] = RESENT
        elif v != KEPT and k == corpus_labels.README and boundary == 0:
            out[k] = VERBATIM
    return out


_CONTEXT_WHY = {
    RESENT: "Claude Code re-sent CLAUDE.md after the boundary, before its first reply",
    VERBATIM: "raised in a turn Claude Code kept verbatim after the summary",
}


def ranked(keys: Iterable[str]) -> dict[str, str]:
    """Each key as the corpus names it: ``(line N)`` as the attempt's rank (``#1``)."""
    seen: Counter[str] = Counter()
    out = {}
    for key in keys:
        base = _LINE.sub("", key)
        if base != key:
            seen[base] += 1
            out[key] = f"{base} #{seen[base]}"
        else:
            out[key] = key
    return out


def cases() -> list[Case]:
    """Every labelled case (the real sessions' where they are beside the clone)."""
    return [*_fixture_cases(), *_hand_cases(), *real_cases()]


def real_cases() -> Iterator[Case]:
    """The real sessions' cases, for those beside the clone (see ``corpus_real``)."""
    for path in transcripts.real_sessions():
        labels = corpus_real.LABELS.get(path.name)
        if labels is not None:
            yield Case(
                name=f"real {path.name[:8]}",
                fixture=path,
                boundary=0,
                summary=None,
                labels={k: v for k, (v, _) in labels.items()},
                reasons={k: why for k, (_, why) in labels.items()},
                by_line=True,
            )


def _fixture_cases() -> Iterator[Case]:
    for fixture, shift in ((transcripts.NOTES, _v21), (transcripts.NOTES_2_0, _v20)):
        tag = fixture.name.removesuffix("-notes.jsonl")
        for boundary, (what, labels, why) in enumerate(
            (
                ("auto", corpus_labels.AUTO_REAL, corpus_labels.AUTO_WHY),
                ("manual", corpus_labels.MANUAL_REAL, corpus_labels.MANUAL_WHY),
            )
        ):
            shifted = shift(labels, boundary)
            yield Case(
                name=f"{tag} {what}",
                fixture=fixture,
                boundary=boundary,
                summary=None,
                labels=shifted,
                reasons={k: _CONTEXT_WHY.get(v, why.get(k, "")) for k, v in shifted.items()},
            )


def _hand_cases() -> Iterator[Case]:
    manual = {**corpus_labels.HAND_MANUAL, **corpus_labels.HAND_MANUAL_BLIND}
    for boundary, (what, table) in enumerate(
        (("auto", corpus_labels.HAND_AUTO), ("manual", manual))
    ):
        for name, (text, labels) in table.items():
            yield Case(
                name=f"hand {what}: {name}",
                fixture=transcripts.NOTES,
                boundary=boundary,
                summary=text,
                labels=_v21(labels, boundary),
            )


# -- judging -------------------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class Judged:
    """One labelled obligation of a case: the hand verdict and what the matcher said."""

    case: str
    kind: str
    key: str
    label: str
    flagged: bool  # the matcher's "not evidenced"

    @property
    def dropped(self) -> bool:
        """The hand verdict: the summary does not carry it (``partial`` or ``absent``)."""
        return self.label in (PARTIAL, ABSENT)


@attrs.frozen(kw_only=True)
class Live:
    """A fixture's compaction: its review, the state before it and its own summary."""

    review: CompactionReview
    state: SessionState
    summary: str


def compactions(fixture: Path) -> list[Live]:
    """Each compaction of ``fixture``, ingested into a throwaway journal."""
    with tempfile.TemporaryDirectory() as folder, eventstore.open(Path(folder) / "c.db") as j:
        result = eventstore.ingest(j, fixture)
        s = j.session(result.session_id)
        events = list(s.events())
        return [
            Live(review=r, state=s.state_at(r.version - 1), summary=_summary(events[r.version - 1]))
            for r in result.compactions
        ]


def _summary(event: object) -> str:
    return str(getattr(event, "summary", ""))


def judge(case: Case, live: Live) -> Iterator[Judged]:
    """The case's obligations (none resolved later), judged as the review does: by the
    matcher on the case's summary, then by what Claude Code kept or re-sent."""
    carried = carried_by(live.state, live.summary if case.summary is None else case.summary)
    names = (
        by_line(live.review.obligations)
        if case.by_line
        else ranked(o.key for o in live.review.obligations)
    )
    for o in live.review.obligations:
        if o.resolved_later:
            continue
        held = (
            o.key in carried.constraints
            or o.key in carried.calls
            or carried.dispositions.get(o.key) == o.detail
        )
        key = names[o.key]
        label = case.labels.get(key, "unlabelled")
        flagged = not (held or o.kept_verbatim or o.resent)
        yield Judged(case=case.name, kind=o.kind, key=key, label=label, flagged=flagged)


def by_line(obligations: Iterable[ObligationReview]) -> dict[str, str]:
    """Each obligation as a real session's labels name it: an attempt by ``line N``."""
    return {o.key: m.group(1) if (m := _AT.search(o.key)) else o.key for o in obligations}


def judge_all() -> list[Judged]:
    """Every case judged (each fixture ingested once)."""
    lives = {f: compactions(f) for f in {c.fixture for c in cases()}}
    return [j for c in cases() for j in judge(c, lives[c.fixture][c.boundary])]


@attrs.frozen(kw_only=True)
class Score:
    """Precision and recall of "not evidenced" against the hand verdicts."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        """Of the obligations flagged not evidenced, the share the summary really drops."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        """Of the obligations the summary drops, the share flagged."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def score(judged: list[Judged]) -> Score:
    """The confusion counts of ``judged``."""
    return Score(
        tp=sum(j.flagged and j.dropped for j in judged),
        fp=sum(j.flagged and not j.dropped for j in judged),
        fn=sum(not j.flagged and j.dropped for j in judged),
        tn=sum(not j.flagged and not j.dropped for j in judged),
    )


def table(judged: list[Judged]) -> str:
    """The Markdown table of docs/claude-code.md."""
    rows = [
        "| obligations | labelled | flagged | TP | FP | FN | precision | recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, part in (
        ("rules", [j for j in judged if j.kind == "constraint"]),
        ("failed or refused attempts, corrections", [j for j in judged if j.kind != "constraint"]),
        ("all", judged),
    ):
        s = score(part)
        rows.append(
            f"| {name} | {len(part)} | {s.tp + s.fp} | {s.tp} | {s.fp} | {s.fn} |"
            f" {s.precision:.2f} | {s.recall:.2f} |"
        )
    return "\n".join(rows)


def main() -> int:
    """Print the table, the project's own cases alone, and every case it gets wrong."""
    judged = judge_all()
    print(table(judged))
    real = {c.name for c in real_cases()}
    if real:
        print("\nwithout the real sessions (a clone without ../shared):")
        print(table([j for j in judged if j.case not in real]))
    else:
        print("(the real sessions are not beside the clone: their cases are left out)")
    for j in judged:
        if j.flagged != j.dropped:
            wrong = f"flagged but {j.label}" if j.flagged else f"not flagged but {j.label}"
            print(f"  {wrong}: {j.case}: {j.key}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
