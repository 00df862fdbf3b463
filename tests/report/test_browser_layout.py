"""The report's layout in a real browser: navigation keeps the page still, hostile
strings neither reorder nor widen it, and small or late marks stay visible."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import eventstore
import reducers as r
from eventstore._report._build import DETAIL_TURNS
from eventstore._report._html import visible
from eventstore.cli import main
from tests.browser import Page, launch, needs_browser, report
from tests.helpers import config, fill, new_session
from tests.timelines import long_text_session

pytestmark = needs_browser


@pytest.fixture(name="browser", scope="module")
def _browser() -> Iterator[Any]:
    yield from launch()


def _tall(journal: eventstore.Journal) -> Path:
    """A session whose 80 open constraints push the events list below the fold."""
    s = new_session(journal, "tall")
    for i in range(80):
        s.append_turn("user", f"t{i}", 10)
        s.state_constraint(f"k{i}", "x")
    return Path(journal.recorder.location)


# Where the slider is, how far the window scrolled, and whether the current chip shows.
_WHERE = """() => {
  const s = document.querySelector("section.session:not([hidden])");
  const box = s.querySelector(".events").getBoundingClientRect();
  const chip = s.querySelector(".events .chip.current");
  const c = chip ? chip.getBoundingClientRect() : null;
  return {
    sliderTop: s.querySelector(".slider").getBoundingClientRect().top,
    scrollY: window.scrollY,
    chip: chip ? Number(chip.dataset.version) : null,
    chipShown: !!c && c.top >= box.top - 1 && c.bottom <= box.bottom + 1,
    focused: document.activeElement.className,
  };
}"""


class TestNavigation:
    def test_the_slider_scrolls_the_events_list_not_the_window(
        self, browser: Any, journal: eventstore.Journal
    ) -> None:
        """Stepping with the keyboard or the buttons keeps the window still and the focused
        slider in view; the events list alone scrolls to the current event."""
        page = Page(browser, report(_tall(journal), "tall"), height=800)
        slider = page.page.locator(".slider")
        slider.focus()
        for key, version in (("Home", 0), ("ArrowRight", 1), ("End", None)):
            page.page.keyboard.press(key)
            where = page.page.evaluate(_WHERE)
            assert where["scrollY"] == 0, key
            assert 0 <= where["sliderTop"] <= 800, key
            assert where["focused"] == "slider", key
            if version is not None:  # version 0 (before the first event) has no chip
                assert where["chip"] == (version or None), key
        where = page.page.evaluate(_WHERE)
        assert where["chip"] is not None
        assert where["chipShown"]
        page.page.click("button.step[title='first version']")
        page.page.click("button.step[title='next listed event']")
        where = page.page.evaluate(_WHERE)
        assert (where["scrollY"], where["chip"], where["chipShown"]) == (0, 1, True)
        assert page.errors == []


# The left edge of each character of ``word`` wherever it is written under ``selector``.
_EDGES = """([selector, word]) => {
  const out = [];
  for (const el of document.querySelectorAll(selector)) {
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const at = n.data.indexOf(word);
      if (at < 0) continue;
      out.push(Array.from(word, (_, k) => {
        const r = document.createRange();
        r.setStart(n, at + k);
        r.setEnd(n, at + k + 1);
        return r.getBoundingClientRect().left;
      }));
    }
  }
  return out;
}"""

_BIDI_KEYS = ("plan-A\u202e", "\u2069\u202eplan-B", "\u05ea\u05d5\u05db\u05e0\u05d9\u05ea")


class TestBidi:
    def test_an_override_in_a_key_cannot_reverse_the_page_s_words(
        self, browser: Any, journal: eventstore.Journal
    ) -> None:
        """Keys holding U+202E (also after a stray U+2069) or Hebrew: the status DROPPED
        reads left to right in the timeline labels and the details, and the override is
        shown as an escape while the Hebrew is shown as itself."""
        s = new_session(journal, "bidi")
        fill(s, 1)
        for key in _BIDI_KEYS:
            s.dispose(key, "rejected", "locks")
        fill(s, 4)
        s.truncate(0, 3, "budget")
        page = Page(browser, report(Path(journal.recorder.location), "bidi"))
        labels = page.page.locator(".timeline .mark.obligation text").all_text_contents()
        assert sorted(labels) == sorted(
            f"negative fact {visible(key)} \u2014 DROPPED" for key in _BIDI_KEYS
        )
        assert "\u2039U+202E\u203a" in labels[0]
        edges = page.page.evaluate(_EDGES, [".timeline .mark.obligation text", "DROPPED"])
        for key in _BIDI_KEYS:
            page.page.click(f".mark.obligation[data-id='{key}'] circle")
            assert f"negative fact {visible(key)} (DROPPED)" in page.details()
            edges += page.page.evaluate(_EDGES, [".details .dtitle", "DROPPED"])
        assert len(edges) == 2 * len(_BIDI_KEYS)
        for xs in edges:
            assert xs == sorted(xs), xs  # left to right: not DEPPORD
            assert len(set(xs)) == len(xs), xs
        assert page.errors == []


class TestLongText:
    def test_long_unbroken_texts_never_widen_the_page(
        self, browser: Any, journal: eventstore.Journal
    ) -> None:
        """Unbroken 100,000-character reasons, names, texts and 3,000-character keys: at
        every version, and with each mark's details open, the page is no wider than the
        window."""
        s = long_text_session(journal)
        page = Page(browser, report(Path(journal.recorder.location), "long"))
        width = "document.documentElement.scrollWidth"
        for v in range(s.version + 1):
            page.page.locator(".slider").fill(str(v))
            assert page.page.evaluate(width) <= 1280, v
        marks = page.page.locator(".timeline .mark")
        for i in range(marks.count()):
            marks.nth(i).dispatch_event("click")
            assert page.page.evaluate(width) <= 1280, page.details()[:80]
        assert "more chars)" in page.details()
        assert page.errors == []


# Each label of a kind of mark: its text, its box, its mark's x and its anchor.
_LABELS = """(kind) => Array.from(document.querySelectorAll(".timeline .mark." + kind)).map((g) => {
  const t = g.querySelector("text:not(.glyph)");
  const dot = g.querySelector("circle, path").getBBox();
  const box = t.getBBox();
  return {
    id: g.dataset.id, text: t.textContent, anchor: t.getAttribute("text-anchor"),
    left: box.x, right: box.x + box.width, top: box.y, bottom: box.y + box.height,
    dot: dot.x + dot.width / 2, width: Number(g.ownerSVGElement.getAttribute("width")),
  };
})"""


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )


class TestLabels:
    def test_marks_near_the_end_are_labelled_on_their_left(
        self, browser: Any, journal: eventstore.Journal
    ) -> None:
        """Obligations raised at the session's end and a marker on a seam near it get
        their full labels, on the left of their marks; no two labels overlap and all stay
        inside the timeline."""
        s = new_session(journal, "late")
        fill(s, 20)
        s.state_constraint("early-rule", "x")
        fill(s, 20)
        node = s.compact(
            tier=1,
            input=(0, 38),
            covers=(0, 38),
            tail_start=38,
            summary="s",
            tokens=3,
            constraints=["early-rule"],
        )
        marker = s.emit_marker(node.node_id)
        s.open_call("deploy-prod", "tool_call", "deploy")
        s.state_constraint("no-force-push", "never force-push")
        page = Page(browser, report(Path(journal.recorder.location), "late"))
        obligations = page.page.evaluate(_LABELS, "obligation")
        (pin,) = page.page.evaluate(_LABELS, "marker")
        assert {o["id"]: o["text"] for o in obligations} == {
            "early-rule": "constraint early-rule \u2014 carried by " + node.node_id,
            "deploy-prod": "call deploy-prod \u2014 in context",
            "no-force-push": "constraint no-force-push \u2014 in context",
        }
        assert pin["text"] == f"{marker.marker_id} on {node.node_id} valid"
        labels = [*obligations, pin]
        for label in labels:
            assert 0 < label["left"] < label["right"] <= label["width"], label
            if label["id"] != "early-rule":
                assert (label["anchor"], label["right"] < label["dot"]) == ("end", True), label
        assert not any(_overlap(a, b) for i, a in enumerate(labels) for b in labels[i + 1 :])
        assert page.errors == []


# Each turn (or run of turns): its status and box.
_TURNS = """() => Array.from(document.querySelectorAll(".mark.turn, .mark.band"), (g) => {
  const r = g.querySelector("rect").getBoundingClientRect();
  return { status: g.dataset.status, left: r.left, right: r.right, top: r.top, bottom: r.bottom };
})"""


class TestZeroTokenTurns:
    @pytest.mark.parametrize("before", [4, DETAIL_TURNS + 1])
    def test_zero_token_turns_are_visible_and_clickable_where_they_are(
        self, browser: Any, journal: eventstore.Journal, before: int
    ) -> None:
        """Zero-token turns at one position (each turn; past the detail limit each run:
        the withdrawn ones join the wide withdrawn run) share a column centred on that
        position, each a slice at least 5 px wide and 4 px tall; the resident one after a
        clear takes a click and says so."""
        s = journal.start_session(
            "tok0", config(truncator_unit="tokens", floor_unit="tokens", floor_span=0)
        )
        s.extend(
            r.TurnAppended(index=i, role="user", content="x", tokens=50) for i in range(before)
        )
        s.extend(
            r.TurnAppended(index=before + i, role="tool", content="", tokens=0) for i in range(3)
        )
        s.clear_context("reset")
        s.append_turn("user", "after the clear", 0)
        page = Page(browser, report(Path(journal.recorder.location), "tok0"))
        turns = page.page.evaluate(_TURNS)
        slices = [t for t in turns if t["right"] - t["left"] < 20]
        assert [t["status"] for t in slices] == ["withdrawn"] * (3 if before == 4 else 0) + [
            "resident"
        ]
        end = max(t["right"] for t in turns if t not in slices)  # where the 50-token turns end
        for t in slices:
            assert t["right"] - t["left"] >= 5
            assert t["bottom"] - t["top"] >= 4
            assert abs((t["left"] + t["right"]) / 2 - end) <= 1.5
        tops = sorted(t["top"] for t in slices)
        assert len(set(tops)) == len(tops)  # stacked, not on top of each other
        kind = "turn" if before == 4 else "band"
        page.page.click(f".mark.{kind}[data-status=resident] rect")
        assert "status at v" in page.details()
        assert "resident" in page.details()
        assert page.errors == []


_TICKS = """() => Array.from(document.querySelectorAll(
  "section.session:not([hidden]) .axis text:not(.lanelabel)"),
  (t) => [t.textContent, Number(t.getAttribute("x"))])"""


class TestAxis:
    @pytest.mark.parametrize("turns", [0, 3])
    def test_a_session_without_positions_has_one_tick(
        self, browser: Any, journal: eventstore.Journal, turns: int
    ) -> None:
        """A session with no turn, or with zero-token turns only, draws tick 0 alone (not
        0 and 1 on top of each other); a session with positions draws distinct ticks."""
        s = journal.start_session("empty", config(truncator_unit="tokens", floor_unit="tokens"))
        for i in range(turns):
            s.append_turn("tool", f"t{i}", 0)
        fill(new_session(journal, "some"), 7)
        page = Page(browser, report(Path(journal.recorder.location)))
        page.open("empty")
        assert page.page.evaluate(_TICKS) == [["0", 132]]
        page.open("some")
        ticks = page.page.evaluate(_TICKS)
        assert [t for t, _ in ticks] == [str(i) for i in range(8)]
        assert len({x for _, x in ticks}) == len(ticks)
        assert page.errors == []


class TestTampered:
    def test_versions_past_a_broken_link_say_they_are_not_verified(
        self, browser: Any, db_path: Path
    ) -> None:
        """With a row edited behind tierlog's back, the caption warns from its version on
        (not before), the listed events from there on are marked, and the banner shows."""
        with eventstore.open(db_path) as journal:
            s = new_session(journal, "t")
            fill(s, 3)
            s.state_constraint("k", "x")
            fill(s, 2)
            last = s.version
        conn = sqlite3.connect(db_path)
        conn.executescript("DROP TRIGGER events_no_update;")
        conn.execute(
            "UPDATE events SET payload = json_set(payload, '$.text', 'y') WHERE version = 5"
        )
        conn.commit()
        conn.close()
        out = db_path.with_suffix(".html")
        assert main(["report", str(db_path), "t", "-o", str(out)]) == 1
        page = Page(browser, out)
        assert page.page.locator(".tampered").first.is_visible()
        caption = "section.session:not([hidden]) .vlabel"
        for v in range(last + 1):
            page.page.locator(".slider").fill(str(v))
            warned = page.page.locator(caption).inner_text()
            assert ("not verified: the hash chain breaks at v5" in warned) == (v >= 5), v
        marked = page.page.locator(".events .chip.unverified").evaluate_all(
            "(cs) => cs.map((c) => Number(c.dataset.version))"
        )
        assert marked == [5]
        assert page.errors == []


class TestEventsList:
    def test_banded_obligations_are_listed_with_their_keys(
        self, browser: Any, journal: eventstore.Journal
    ) -> None:
        """Past 60 obligations the routine ones are banded on the timeline, but the events
        list still names each one's key, raised and ended."""
        s = new_session(journal, "many")
        fill(s, 2)
        for i in range(40):
            s.state_constraint(f"rule-{i}", "x")
            s.lift_constraint(f"rule-{i}")
            s.dispose(f"plan-{i}", "rejected", "slow")
            s.dispose(f"plan-{i}", "failed", "slower")
        fill(s, 1)
        page = Page(browser, report(Path(journal.recorder.location), "many"))
        assert page.page.locator(".timeline .mark.routine").count() > 0
        chips = page.page.locator(".events .chip").all_inner_texts()
        for i in (0, 39):
            assert any(c.endswith(f"ConstraintStated rule-{i}") for c in chips)
            assert any(c.endswith(f"ConstraintLifted rule-{i}") for c in chips)
            assert sum(c.endswith(f"ItemDisposed plan-{i}") for c in chips) == 2
        assert not any(c.endswith(("ItemDisposed", "ConstraintStated")) for c in chips)
        assert page.errors == []
