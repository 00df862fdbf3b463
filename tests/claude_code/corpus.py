"""The labelled evidence corpus, and the precision and recall of "not evidenced" against it.

Each case is one compaction of a transcript the project made itself (the CLI
fixtures of ``tests/data/claude-code``) with a summary: the one Claude Code resumed
from (``summary=None``), or one written by hand for the case. For every obligation
live at that compaction the case holds a verdict a person gave by reading the
summary: ``kept`` (it states the rule or the failed attempt in substance),
``partial`` (it mentions the thing but not what matters: a command without its
failure, a file without the rule) or ``absent``. An attempt resolved later is no
obligation and has no label.

The matcher's "not evidenced" is right when the verdict is ``partial`` or ``absent``
(the summary does not carry it), wrong when it is ``kept``. Run it with
``make evidence-claude-code`` (``python -m tests.claude_code.corpus``): it prints the
table published in docs/claude-code.md, then, where the real transcripts are beside
the clone, what the matcher flags in them (they have no labels).
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
from eventstore.claude_code._review import CompactionReview
from reducers import SessionState
from tests import transcripts

KEPT, PARTIAL, ABSENT = "kept", "partial", "absent"

# The obligations of the notes fixtures, by key; an attempt's "(line N)" reads as its
# rank among the attempts at the same thing ("#1", "#2"), so a regenerated fixture whose
# lines moved keeps its labels.
ETC = "heuristic: Never modify files under /etc."
CHECK = "CLAUDE.md: Always run `make check` before you say a change is done."
MAIN = "CLAUDE.md: Never push to the main branch."
PASSWORDS = "spec.md: Passwords must never be written to notes.txt."
README = "heuristic: Bitte ändere niemals die Datei README.md."
LS = "heuristic: No, don't use git here; use ls instead."
ADD_1 = "Bash: git add -A #1"
ADD_2 = "Bash: git add -A #2"
WRITE = "Write: /etc/notes-app.conf #1"
STATUS = "Bash: git status #1"
CORRECTED = "corrected: Bash: git status #1"
_LINE = re.compile(r" \(line \d+\)$")


@attrs.frozen(kw_only=True)
class Case:
    """One compaction, a summary (``None``: the transcript's own) and the hand verdicts."""

    name: str
    fixture: Path
    boundary: int
    summary: str | None
    labels: Mapping[str, str]


_AUTO_REAL = {
    ETC: KEPT,
    CHECK: ABSENT,
    MAIN: ABSENT,
    PASSWORDS: KEPT,
    README: ABSENT,
    ADD_1: KEPT,
    ADD_2: KEPT,
    WRITE: KEPT,
}
_MANUAL_REAL = {
    ETC: ABSENT,
    PASSWORDS: ABSENT,
    README: ABSENT,
    CHECK: ABSENT,
    MAIN: ABSENT,
    LS: KEPT,
    ADD_1: ABSENT,
    ADD_2: ABSENT,
    WRITE: ABSENT,
    STATUS: ABSENT,
    CORRECTED: KEPT,
}
_HAND_AUTO = {
    "paraphrased": (
        "Context: the user wants notes.txt set up. Constraints: nothing under /etc may be"
        " modified (the user's rule); CLAUDE.md says to always run make check before calling"
        " a change done, and never to push to main; the spec forbids writing passwords to"
        " notes.txt; the user also said, in German, never to change README.md.\n"
        "What went wrong: both attempts at `git add -A` errored with 'not a git repository';"
        " writing /etc/notes-app.conf was denied by the permission check.",
        dict.fromkeys(_AUTO_REAL, KEPT),
    ),
    "generic": (
        "The assistant worked on the notes file and explored the repository setup."
        " Progress was made and the work continues.",
        dict.fromkeys(_AUTO_REAL, ABSENT),
    ),
    "unrelated mentions": (
        "notes.txt now exists and holds the first note. The agent looked at"
        " /etc/notes-app.conf and ran git add -A. README.md and docs/spec.md were opened;"
        " the main branch is checked out.",
        {
            **dict.fromkeys(_AUTO_REAL, ABSENT),
            ADD_1: PARTIAL,
            ADD_2: PARTIAL,
            WRITE: PARTIAL,
            PASSWORDS: PARTIAL,
        },
    ),
    "one attempt of two": (
        "The user forbade any change to /etc. The first `git add -A` failed: not a git"
        " repository. Then notes.txt was written with echo.",
        {**dict.fromkeys(_AUTO_REAL, ABSENT), ETC: KEPT, ADD_1: KEPT, ADD_2: ABSENT},
    ),
}
_HAND_MANUAL = {
    "everything, in other words": (
        "Setup of notes.txt is complete. Rules: never touch /etc; passwords never go into"
        " notes.txt; do not edit README.md; per CLAUDE.md, run make check before finishing"
        " and never push to main; use ls, not git, in this folder.\n"
        "Failures: git add -A failed twice and git status failed (no git repository); the"
        " write to /etc/notes-app.conf was rejected. The user corrected the agent: no git"
        " here, use ls instead.",
        dict.fromkeys(_MANUAL_REAL, KEPT),
    ),
    "rules only": (
        "The user said never to modify files under /etc, and not to touch README.md. The"
        " spec: passwords must never be written to notes.txt. CLAUDE.md: always run make"
        " check before a change is done; never push to the main branch. Use ls, not git.",
        {
            **dict.fromkeys(_MANUAL_REAL, ABSENT),
            ETC: KEPT,
            README: KEPT,
            PASSWORDS: KEPT,
            CHECK: KEPT,
            MAIN: KEPT,
            LS: KEPT,
            CORRECTED: PARTIAL,
        },
    ),
}


def _v20(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels without CLAUDE.md's rules: 2.0.77 does not put CLAUDE.md in the
    transcript."""
    return {k: v for k, v in labels.items() if not k.startswith("CLAUDE.md: ")}


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
    """Every labelled case."""
    out = []
    for fixture, shift in ((transcripts.NOTES, dict), (transcripts.NOTES_2_0, _v20)):
        tag = fixture.name.removesuffix("-notes.jsonl")
        out.append(
            Case(
                name=f"{tag} auto",
                fixture=fixture,
                boundary=0,
                summary=None,
                labels=shift(_AUTO_REAL),
            )
        )
        out.append(
            Case(
                name=f"{tag} manual",
                fixture=fixture,
                boundary=1,
                summary=None,
                labels=shift(_MANUAL_REAL),
            )
        )
    for name, (text, labels) in _HAND_AUTO.items():
        out.append(
            Case(
                name=f"hand auto: {name}",
                fixture=transcripts.NOTES,
                boundary=0,
                summary=text,
                labels=labels,
            )
        )
    for name, (text, labels) in _HAND_MANUAL.items():
        out.append(
            Case(
                name=f"hand manual: {name}",
                fixture=transcripts.NOTES,
                boundary=1,
                summary=text,
                labels=labels,
            )
        )
    return out


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
    """The case's obligations (none resolved later), judged by the matcher."""
    carried = carried_by(live.state, live.summary if case.summary is None else case.summary)
    names = ranked(o.key for o in live.review.obligations)
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
        yield Judged(case=case.name, kind=o.kind, key=key, label=label, flagged=not held)


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


def real_lines() -> Iterator[str]:
    """What the matcher flags in the real transcripts beside the clone (unlabelled)."""
    for path in transcripts.real_sessions():
        for i, live in enumerate(compactions(path)):
            obligations = [o for o in live.review.obligations if not o.resolved_later]
            flagged = len(live.review.not_evidenced)
            yield (
                f"{path.name[:8]} compaction {i + 1}: {len(obligations)} live obligations,"
                f" {flagged} flagged not evidenced"
            )


def main() -> int:
    """Print the table, the mistakes, and the real transcripts' counts."""
    judged = judge_all()
    print(table(judged))
    for j in judged:
        if j.flagged != j.dropped:
            wrong = "flagged but kept" if j.flagged else f"not flagged but {j.label}"
            print(f"  {wrong}: {j.case}: {j.key}")
    for line in real_lines():
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
