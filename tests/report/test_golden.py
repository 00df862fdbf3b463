"""The report's timeline model of one small session, pinned as a golden JSON file.

No browser: the session is written to a real journal, its events are folded by
``eventstore._report._build.build``, and the :class:`Timeline` is serialised
canonically (sorted keys, two-space indent, ASCII) and compared to
``tests/report/golden/timeline.json``. When the model changes on purpose, regenerate
the file and review its diff before committing it::

    TIERLOG_REGOLD=1 .venv/bin/python -m pytest -q tests/report/test_golden.py
    git diff tests/report/golden/
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from pathlib import Path

import attrs
import pytest

import eventstore
from eventstore._report._build import build
from eventstore._report._timeline import Timeline
from tests.timelines import story_session

GOLDEN = Path(__file__).parent / "golden" / "timeline.json"
REGOLD = "TIERLOG_REGOLD"


def _plain(value: object) -> object:
    """What ``json`` cannot write by itself: the model's read-only mappings."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} in the timeline model")


def canonical(timeline: Timeline) -> str:
    """The model as JSON text that is the same on every run and machine."""
    plain = attrs.asdict(timeline)
    return json.dumps(plain, indent=2, sort_keys=True, default=_plain) + "\n"


def compare(text: str, golden: Path) -> None:
    """Fail with a unified diff (golden first) unless ``text`` is the golden file's."""
    want = golden.read_text(encoding="utf-8") if golden.exists() else ""
    if text == want:
        return
    diff = difflib.unified_diff(
        want.splitlines(keepends=True), text.splitlines(keepends=True), str(golden), "now"
    )
    hint = f"the timeline model changed; if that is intended, rerun with {REGOLD}=1 and commit"
    pytest.fail(f"{hint} {golden.name}:\n{''.join(diff)}", pytrace=False)


@pytest.fixture(name="timeline")
def _timeline(journal: eventstore.Journal) -> Timeline:
    s = story_session(journal)
    return build(s.id, s.events())


class TestGolden:
    def test_the_model_is_the_golden_one(self, timeline: Timeline) -> None:
        """The story session's timeline model is, field for field, the committed golden."""
        if os.environ.get(REGOLD):
            GOLDEN.parent.mkdir(exist_ok=True)
            GOLDEN.write_text(canonical(timeline), encoding="utf-8")
            pytest.skip(f"{REGOLD} set: rewrote {GOLDEN}; review its diff")
        compare(canonical(timeline), GOLDEN)

    def test_the_story_draws_every_kind_of_mark(self, timeline: Timeline) -> None:
        """The golden is not vacuous: it holds each mark the page draws, in each state."""
        assert {n.tier for n in timeline.nodes} == {1, 2}
        assert [n.replaced_at is not None for n in timeline.nodes] == [True, False]
        assert [r.action for r in timeline.refusals] == ["spilled"]
        assert [(m.refused, m.invalidated_at is not None) for m in timeline.markers] == [
            (False, True),
            (True, False),
            (False, True),
        ]
        kinds = {o.kind for o in timeline.obligations}
        assert kinds == {"open_call", "constraint", "negative_fact"}
        assert {r.kind for r in timeline.ranges} == {"truncation", "spill"}
        assert {p.kind for p in timeline.points} == {
            "checkpoint",
            "resume_digest",
            "resume_raw_checkpoint",
        }
        assert [w.kind for w in timeline.withdrawals] == ["retraction", "clear"]

    def test_the_text_is_the_same_twice(self, tmp_path: Path) -> None:
        """Two journals of the same story give the same text (no clock, path or order in it)."""
        texts = []
        for name in ("one", "two"):
            (tmp_path / name).mkdir()
            with eventstore.open(tmp_path / name / "agent.db") as journal:
                s = story_session(journal)
                texts.append(canonical(build(s.id, s.events())))
        assert texts[0] == texts[1]

    def test_a_change_fails_with_a_readable_diff(self, timeline: Timeline, tmp_path: Path) -> None:
        """A model that differs in one field fails, showing that field's old and new lines."""
        golden = tmp_path / "timeline.json"
        golden.write_text(canonical(timeline), encoding="utf-8")
        changed = attrs.evolve(timeline, unit="turns")
        with pytest.raises(pytest.fail.Exception) as failed:
            compare(canonical(changed), golden)
        message = str(failed.value)
        assert '-  "unit": "tokens",' in message
        assert '+  "unit": "turns",' in message
        assert f"{REGOLD}=1" in message
