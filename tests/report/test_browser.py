"""The report in a real headless browser: Debian's chromium, driven by playwright.

Every count the page draws is compared with the journal's own state at that
version (``Session.state_at``, what ``tierlog state --at`` prints), read through
``tests.timelines.expected``. Skips when playwright or chromium is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import eventstore
import reducers as r
from eventstore._report._html import visible
from eventstore.cli._demo import run_demo
from tests import transcripts
from tests.browser import Page, launch, needs_browser, report
from tests.helpers import fill, new_session
from tests.report.test_html import HOSTILE
from tests.timelines import expected, withdrawal_session

_RAISES = (r.CallOpened, r.ConstraintStated, r.ItemDisposed)

pytestmark = needs_browser

# What the visible session's timeline draws, read from the page's own marks.
DRAWN = """() => {
  const s = document.querySelector("section.session:not([hidden])");
  const marks = (kind) => Array.from(s.querySelectorAll(".timeline .mark." + kind));
  const turns = {};
  for (const g of [...marks("turn"), ...marks("band")]) {
    const n = Number(g.getAttribute("data-count") || 1);
    turns[g.dataset.status] = (turns[g.dataset.status] || 0) + n;
  }
  const byId = (kind) =>
    Object.fromEntries(marks(kind).map((g) => [g.dataset.id, g.dataset.status]));
  const summary = s.querySelector(".summary").dataset;
  return {
    turns, nodes: byId("node"), markers: byId("marker"),
    obligations: marks("obligation").filter((g) => g.dataset.status !== "ended")
      .map((g) => [g.dataset.kind, g.dataset.id, g.dataset.status]),
    ended: marks("obligation").length - marks("obligation").filter(
      (g) => g.dataset.status !== "ended").length,
    routine: marks("routine").reduce((a, g) => a + Number(g.dataset.count), 0),
    refusals: marks("refusal").length,
    withdrawals: marks("withdrawal").map((g) => [Number(g.dataset.version), g.dataset.status]),
    versions: marks("node").concat(marks("marker"), marks("refusal"), marks("obligation"),
      marks("withdrawal")).every((g) => /^[0-9]+$/.test(g.dataset.version)),
    occupancy: Number(summary.occupancy), depth: Number(summary.depth), tail: Number(summary.tail),
    withdrawn: Number(summary.withdrawn),
  };
}"""


def _refusals_until(s: eventstore.Session, v: int) -> int:
    return sum(isinstance(e, r.CompactionRefused) for e in s.events(stop=v))


def _withdrawals_until(s: eventstore.Session, v: int) -> list[list[Any]]:
    out: list[list[Any]] = []
    for version, e in enumerate(s.events(stop=v), 1):
        if isinstance(e, r.TurnRetracted):
            out.append([version, "retraction"])
        elif isinstance(e, r.ContextCleared):
            out.append([version, "clear"])
    return out


def _matches(drawn: dict[str, Any], s: eventstore.Session, v: int) -> None:
    """The page at version ``v`` draws what the journal's state at ``v`` holds."""
    state = s.state_at(v)
    want = expected(state)
    assert drawn["turns"] == dict(want.turn_counts), v
    assert drawn["nodes"] == want.nodes, v
    assert drawn["markers"] == want.markers, v
    got = {(kind, key): status for kind, key, status in drawn["obligations"]}
    assert got == want.obligations, v
    assert drawn["refusals"] == _refusals_until(s, v), v
    assert drawn["withdrawals"] == _withdrawals_until(s, v), v
    assert drawn["withdrawn"] == want.turn_counts["withdrawn"], v
    assert (drawn["occupancy"], drawn["depth"], drawn["tail"]) == (
        state.occupancy,
        state.depth,
        state.tail_start,
    )
    assert drawn["versions"]


@pytest.fixture(name="browser", scope="module")
def _browser() -> Iterator[Any]:
    yield from launch()


class _Page(Page):
    def at(self, v: int, drawn: str = DRAWN) -> dict[str, Any]:
        return super().at(v, drawn)


_report = report


@pytest.fixture(name="demo", scope="module")
def _demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[eventstore.Journal, Path]]:
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    logging.getLogger("tierlog").setLevel(logging.ERROR)
    run_demo(db, lambda _: None)
    logging.getLogger("tierlog").setLevel(logging.NOTSET)
    html = _report(db)
    with eventstore.open(db, readonly=True) as journal:
        yield journal, html


class TestDemoReport:
    def test_every_session_draws_the_journal_at_every_version(
        self, browser: Any, demo: tuple[eventstore.Journal, Path]
    ) -> None:
        """Lanes, bars, markers, refusals and obligations match state_at(v) for each v."""
        journal, html = demo
        page = _Page(browser, html)
        for sid in journal.sessions():
            page.open(sid)
            s = journal.session(sid)
            for v in range(s.version + 1):
                _matches(page.at(v), s, v)
        assert page.errors == []

    def test_clicking_the_refused_marker_shows_its_rules(
        self, browser: Any, demo: tuple[eventstore.Journal, Path], tmp_path: Path
    ) -> None:
        """Incident 1: the refused marker's details list the M2 violation it was refused for."""
        journal, html = demo
        page = _Page(browser, html)
        page.open("incident-1-dropped-rejection")
        page.page.click(".mark.marker[data-status=refused] circle")
        s = journal.session("incident-1-dropped-rejection")
        (refused,) = [e for e in s.events() if isinstance(e, r.MarkerRefused)]
        text = page.details()
        assert f"marker {refused.marker_id} on {refused.node_id} (refused)" in text
        for v in refused.violations:
            assert v.rule in text
            assert v.message in text
        page.page.mouse.move(0, 0)
        page.page.screenshot(path=tmp_path / "incident-1.png", full_page=True)
        assert (tmp_path / "incident-1.png").stat().st_size > 10_000
        assert page.errors == []

    def test_clicking_a_refused_compaction_shows_its_rules(
        self, browser: Any, demo: tuple[eventstore.Journal, Path], tmp_path: Path
    ) -> None:
        """Incident 2: the refused L1 proposal's details list C1 and C5 with their messages."""
        journal, html = demo
        page = _Page(browser, html)
        page.open("incident-2-evicted-constraint")
        page.page.click(".mark.refusal rect")
        s = journal.session("incident-2-evicted-constraint")
        (refused,) = [e for e in s.events() if isinstance(e, r.CompactionRefused)]
        text = page.details()
        assert f"REFUSED compaction {refused.proposal.node_id}" in text
        assert [v.rule for v in refused.violations] == ["C1", "C5"]
        for v in refused.violations:
            assert v.message.replace("37500", "37,500") in text or v.message in text
        page.page.screenshot(path=tmp_path / "incident-2.png", full_page=True)
        assert page.errors == []


class TestHostileContent:
    def test_markup_in_content_is_shown_as_text(
        self, browser: Any, journal: eventstore.Journal, db_path: Path
    ) -> None:
        """A summary holding </script> and an onerror image runs nothing and reads verbatim."""
        s = new_session(journal, "evil")
        s.append_turn(HOSTILE, HOSTILE, 5)
        fill(s, 2)
        s.compact(tier=1, input=(0, 2), covers=(0, 2), tail_start=2, summary=HOSTILE, tokens=3)
        page = _Page(browser, _report(db_path, "evil"))
        assert page.page.evaluate("() => window.__pwned === undefined")
        assert page.page.locator("img").count() == 0
        page.page.click(".mark.node rect")
        assert visible(HOSTILE) in page.details()  # its NUL and RLO shown as escapes
        assert page.errors == []


class TestRealTranscript:
    def test_an_ingested_session_draws_the_journal(self, browser: Any, tmp_path: Path) -> None:
        """A real Claude Code session, ingested: counts match the journal at its compaction,
        and its refused marker shows the rules the audit's review names."""
        db = tmp_path / "real.db"
        path = transcripts.plain_copy(transcripts.LONG_SESSION, tmp_path)
        with eventstore.open(db, synchronous="normal") as journal:
            result = eventstore.ingest(journal, path)
            s = journal.session(result.session_id)
            page = _Page(browser, _report(db, result.session_id))
            (node,) = s.state.nodes.values()
            for v in (0, node.version - 1, node.version, node.version + 1, s.version):
                drawn = page.at(v)
                _matches(drawn, s, v)
                raised = sum(isinstance(e, _RAISES) for e in s.events(stop=v))
                assert len(drawn["obligations"]) + drawn["ended"] + drawn["routine"] == raised
            (review,) = result.compactions
            assert review.marker_status == "refused"
            page.page.click(".mark.marker[data-status=refused] circle")
            text = " ".join(page.details().split())
            for rule in review.marker_rules:
                assert rule in text
            for missing in review.not_evidenced:
                assert missing.key in text
            page.page.click(".mark.node rect")
            assert " ".join(node.summary.split())[:80] in " ".join(page.details().split())
            page.page.screenshot(path=tmp_path / "real.png", full_page=True)
            assert page.errors == []

    def test_many_turns_are_drawn_as_bands(
        self, browser: Any, journal: eventstore.Journal, db_path: Path
    ) -> None:
        """Past the detail limit, turns are drawn as runs whose counts add up per status."""
        s = new_session(journal, "big")
        s.extend(r.TurnAppended(index=i, role="tool", content="x", tokens=2) for i in range(1_500))
        s.truncate(0, 400, "budget")
        s.spill(0, 200)
        s.compact(
            tier=1, input=(0, 1_400), covers=(400, 1_400), tail_start=1_400, summary="s", tokens=9
        )
        page = _Page(browser, _report(db_path, "big"))
        for v in (1_000, s.version - 2, s.version):
            _matches(page.at(v), s, v)
        assert page.page.locator(".mark.turn").count() == 0
        assert page.errors == []


class TestWithdrawals:
    @pytest.mark.parametrize("unit", r.UNITS)
    def test_withdrawn_turns_draw_the_journal_at_every_version(
        self, browser: Any, journal: eventstore.Journal, db_path: Path, unit: str
    ) -> None:
        """A session using retract_turn and clear_context: the withdrawn turns, the cleared
        summary, the broken markers and the obligations drawn match state_at(v) for each v."""
        s = withdrawal_session(journal, unit=unit)
        page = _Page(browser, _report(db_path, "w"))
        for v in range(s.version + 1):
            drawn = page.at(v)
            _matches(drawn, s, v)
        withdrawn = sum(hi - lo for lo, hi in s.state.withdrawn)
        assert drawn["turns"]["withdrawn"] == withdrawn - 1  # turn 0 was truncated first
        assert page.errors == []

    def test_withdrawals_have_their_own_status_legend_and_details(
        self, browser: Any, journal: eventstore.Journal, db_path: Path, tmp_path: Path
    ) -> None:
        """Withdrawn turns are drawn in the legend's withdrawn colour, and the details of a
        withdrawn turn, the clear, the cleared summary and a dropped obligation name the
        event and its version."""
        s = withdrawal_session(journal)
        events = list(s.events())
        (clear_v,) = [v for v, e in enumerate(events, 1) if isinstance(e, r.ContextCleared)]
        retracted = {e.index: v for v, e in enumerate(events, 1) if isinstance(e, r.TurnRetracted)}
        page = _Page(browser, _report(db_path, "w"))
        fill_of = "(sel) => getComputedStyle(document.querySelector(sel)).{}"
        legend = page.page.evaluate(fill_of.format("backgroundColor"), ".legend .sw.r-withdrawn")
        drawn = page.page.evaluate(fill_of.format("fill"), ".mark.turn[data-status=withdrawn] rect")
        assert legend == drawn
        assert legend not in {
            page.page.evaluate(fill_of.format("backgroundColor"), f".legend .sw.r-{status}")
            for status in ("resident", "summarised", "truncated", "spilled")
        }

        page.page.click(".mark.turn[data-index='3'] rect")
        text = page.details()
        assert "status at v" in text
        assert f"withdrawn since v{retracted[3]}" in text
        assert f"v{retracted[3]} (TurnRetracted: pop_item)" in text

        page.page.click(f".mark.withdrawal[data-version='{clear_v}'] text")
        text = page.details()
        assert "context cleared: turns #0" in text
        assert f"v{clear_v} (ContextCleared)" in text
        (cleared,) = [n for n in s.state.nodes.values() if not n.live]
        (broken,) = [
            m for v, m in enumerate(events, 1) if v == clear_v + 1
        ]  # its MarkerInvalidated follows it
        assert isinstance(broken, r.MarkerInvalidated)
        assert cleared.node_id in text
        assert f"{broken.marker_id} (MarkerInvalidated v{clear_v + 1})" in text

        page.page.click(f".mark.node[data-id='{cleared.node_id}'] rect")
        text = page.details()
        assert f"summary node {cleared.node_id} (L1, cleared)" in text
        assert f"v{clear_v} (ContextCleared: clear_session)" in text

        page.at(s.version)
        page.page.click(".mark.obligation[data-id='c2'] circle")
        text = page.details()
        assert "call c2 (DROPPED)" in text
        assert f"v{retracted[10]} (TurnRetracted)" in text
        page.page.mouse.move(0, 0)
        page.page.screenshot(path=tmp_path / "withdrawals.png", full_page=True)
        assert (tmp_path / "withdrawals.png").stat().st_size > 10_000
        assert page.errors == []

    def test_many_withdrawn_turns_are_drawn_as_bands(
        self, browser: Any, journal: eventstore.Journal, db_path: Path
    ) -> None:
        """Past the detail limit, retracted and cleared turns are runs of their own status
        whose counts add up to the journal's."""
        s = new_session(journal, "big")
        s.extend(r.TurnAppended(index=i, role="tool", content="x", tokens=2) for i in range(1_500))
        s.truncate(0, 400, "budget")
        s.compact(
            tier=1, input=(0, 1_400), covers=(400, 1_400), tail_start=1_400, summary="s", tokens=9
        )
        s.retract_turn(1_499, "pop_item")
        s.retract_turn(700, "pop_item")
        s.clear_context("clear_session")
        s.extend(
            r.TurnAppended(index=i, role="tool", content="y", tokens=2) for i in range(1_500, 1_600)
        )
        page = _Page(browser, _report(db_path, "big"))
        for v in (s.version - 101, s.version - 100, s.version):
            drawn = page.at(v)
            _matches(drawn, s, v)
        assert drawn["turns"] == {"truncated": 400, "withdrawn": 1_100, "resident": 100}
        assert page.page.locator(".mark.turn").count() == 0
        assert page.errors == []
