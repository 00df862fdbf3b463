"""How long `tierlog report` takes on a large session, and how big the file is.

Usage: python bench/report.py [--events 100000] [--unit tokens|turns] [--browser]
       python bench/report.py --screenshot docs/report-incident-1.png

Writes a session of about ``--events`` events shaped like a long agent run
(turns, tool calls opened and resolved, constraints, negative facts, truncations
behind the seam, an L1 summary and a marker every few hundred turns, now and then
a refused compaction with its spill), then times, as medians of three runs:
building the timeline, rendering the page, and the whole ``tierlog report``
command. With ``--browser`` (playwright and /usr/bin/chromium) it also times
loading the file until the timeline is drawn, and moving the slider.
``--screenshot`` instead writes the README's picture: the demo's incident 1, its
refused marker clicked.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import eventstore  # noqa: E402
import reducers as r  # noqa: E402
from eventstore._report._build import build  # noqa: E402
from eventstore._report._collect import collect  # noqa: E402
from eventstore._report._html import render  # noqa: E402
from eventstore.cli import main  # noqa: E402
from eventstore.cli._demo import run_demo  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _batch(s: eventstore.Session, start: int, n: int) -> list[r.Event]:
    """``n`` turns from turn ``start`` with tool calls, and now and then a constraint."""
    out: list[r.Event] = []
    for i in range(start, start + n):
        out.append(r.TurnAppended(index=i, role="tool", content=f"output {i}", tokens=300 + i % 97))
        if i % 3 == 0:
            out.append(r.CallOpened(call_id=f"c{i}", kind="tool_call", name="grep"))
        if i % 3 == 2:
            out.append(r.CallResolved(call_id=f"c{i - 2}", outcome="ok"))
        if i % 1_000 == 7:
            out.append(r.ConstraintStated(key=f"k{i}", text=f"rule {i}"))
        if i % 1_000 == 507:
            out.append(r.ItemDisposed(key=f"d{i}", disposition="rejected", reason="tried"))
    return out


def _compact(s: eventstore.Session, lo: int, refuse: bool) -> int:
    """An L1 node over ``[lo, end - 8 turns)`` carrying everything; a marker on it."""
    st = s.state
    hi = st.position_of_turn(st.turns - 8)

    if refuse:  # a summary with a hole at the seam: C4, recorded with a spill
        try:
            short = st.position_of_turn(st.turns - 9)
            s.compact(
                tier=1, input=(lo, hi), covers=(lo, short), tail_start=hi, summary="x", tokens=9
            )
        except eventstore.UnrecoverableCompactionError:
            pass
    node = s.compact(
        tier=1,
        input=(lo, hi),
        covers=(lo, hi),
        tail_start=hi,
        summary=f"work up to {hi}",
        tokens=400,
        unresolved_ids=sorted(st.open_calls),
        constraints=sorted(st.constraints),
        dispositions={k: d.disposition for k, d in st.dispositions.items()},
    )
    s.emit_marker(node.node_id)
    if lo:
        s.truncate(0, lo, "budget")
    return hi


def make_session(db: Path, events: int, unit: str) -> int:
    """Write the workload; returns the session's version."""
    config = eventstore.SessionConfig(
        window_tokens=200_000,
        trigger_tokens=160_000,
        truncator_unit=unit,
        floor_span=8 if unit == "turns" else 2_400,
        floor_unit=unit,
        on_unsafe="spill",
    )
    with eventstore.open(db, synchronous="normal") as journal:
        s = journal.start_session("big", config)
        lo, rounds = 0, 0
        while s.state.version < events - 20:
            s.extend(_batch(s, s.state.turns, min(400, max(1, (events - s.state.version) // 2))))
            rounds += 1
            if s.state.turns >= 16:
                lo = _compact(s, lo, refuse=rounds % 10 == 0)
        return s.state.version


def _median(fn: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _browser(page_path: Path) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("browser: playwright is not installed (pip install -e '.[browser]')")
        return
    with sync_playwright() as p:
        browser = _launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        t0 = time.perf_counter()
        page.goto(page_path.as_uri())
        page.wait_for_selector("section .timeline svg .mark")
        loaded = time.perf_counter() - t0
        marks = page.locator("section .timeline svg .mark").count()
        head = int(page.locator(".slider").first.get_attribute("max") or 0)
        t0 = time.perf_counter()
        for v in range(head // 2, head, max(1, head // 20)):
            page.evaluate("v => Object.values(window.tierlogReport.views)[0].show(v)", v)
        step = (time.perf_counter() - t0) / len(range(head // 2, head, max(1, head // 20)))
        print(
            f"browser: loaded and drawn in {loaded:.2f} s ({marks:,} marks);"
            f" slider step {step * 1000:.0f} ms"
        )
        browser.close()


def _launch(p: Any) -> Any:
    return p.chromium.launch(executable_path=CHROMIUM, args=ARGS)


def screenshot(png: Path) -> None:
    """The demo's incident 1 with its refused marker selected, as the README shows it."""
    from playwright.sync_api import sync_playwright

    logging.getLogger("tierlog").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        run_demo(db, lambda _: None)
        html = Path(tmp) / "incident-1.html"
        main(["report", str(db), "incident-1-dropped-rejection", "-o", str(html)])
        with sync_playwright() as p:
            browser = _launch(p)
            page = browser.new_page(viewport={"width": 1180, "height": 900})
            page.goto(html.as_uri())
            page.click(".mark.marker[data-status=refused] circle")
            page.mouse.move(0, 0)
            box = page.locator(".below").bounding_box()
            height = int(box["y"] + box["height"] + 12) if box else 900
            page.screenshot(path=png, clip={"x": 0, "y": 0, "width": 1180, "height": height})
            browser.close()
    print(f"wrote {png} ({png.stat().st_size:,} bytes)")


def run(events: int, unit: str, browser: bool) -> None:
    logging.getLogger("tierlog").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "big.db"
        t0 = time.perf_counter()
        version = make_session(db, events, unit)
        print(f"session: {version:,} events ({unit}), written in {time.perf_counter() - t0:.1f} s")
        with eventstore.open(db, readonly=True) as journal:
            s = journal.session("big")
            tl = build("big", s.events())
            banded = sum(len(b.raised) for b in tl.routine)
            print(
                f"timeline: {tl.turns:,} turns in {len(tl.runs):,} runs, {len(tl.nodes):,} nodes,"
                f" {len(tl.refusals):,} refusals, {len(tl.markers):,} markers,"
                f" {len(tl.obligations):,} obligations drawn + {banded:,} banded in"
                f" {len(tl.routine):,} bands"
            )
            t_build = _median(lambda: build("big", s.events()))
            report = collect(journal, "big")
            t_render = _median(lambda: render(report))
            size = len(render(report).encode())
        out = Path(tmp) / "big.html"
        with contextlib.redirect_stdout(io.StringIO()):
            t_cli = _median(lambda: main(["report", str(db), "big", "-o", str(out)]))
        print(
            f"build {t_build:.2f} s, render {t_render:.2f} s, tierlog report {t_cli:.2f} s;"
            f" file {size / 1e6:.2f} MB"
        )
        if browser:
            _browser(out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--unit", choices=["tokens", "turns"], default="tokens")
    parser.add_argument("--browser", action="store_true")
    parser.add_argument("--screenshot", type=Path, metavar="PNG")
    a = parser.parse_args()
    if a.screenshot:
        screenshot(a.screenshot)
    else:
        run(a.events, a.unit, a.browser)
