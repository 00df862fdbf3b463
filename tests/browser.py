"""Reports opened in a real headless browser (Debian's chromium, driven by playwright),
shared by the browser test modules; they skip when either is missing."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eventstore.cli import main

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def missing() -> str | None:
    """Why the browser tests cannot run here, or ``None``."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[browser]')"
    if not CHROMIUM.is_file():
        return f"no browser at {CHROMIUM} (apt-get install chromium)"
    return None


needs_browser = pytest.mark.skipif(missing() is not None, reason=missing() or "")


def launch() -> Iterator[Any]:
    """A headless chromium for a module's tests (use from a fixture)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


class Page:
    """A report opened in the browser, with the errors it raised."""

    def __init__(self, browser: Any, html: Path, width: int = 1280, height: int = 900) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": height})
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.goto(html.as_uri())
        self.page.wait_for_selector("section.session:not([hidden]) .timeline svg")

    def open(self, session_id: str) -> None:
        self.page.click(f'[data-open="{session_id}"]')
        self.page.wait_for_selector(f'section[data-session="{session_id}"] .timeline svg')

    def at(self, v: int, drawn: str) -> dict[str, Any]:
        """Move the slider to ``v``; what the script ``drawn`` reads off the page then."""
        self.page.locator("section.session:not([hidden]) .slider").fill(str(v))
        out: dict[str, Any] = self.page.evaluate(drawn)
        return out

    def details(self) -> str:
        text: str = self.page.locator("section.session:not([hidden]) .details").inner_text()
        return text


def report(db: Path, *argv: str) -> Path:
    """``tierlog report DB ARGV`` written next to the journal."""
    out = db.with_suffix(".html")
    assert main(["report", str(db), *argv, "-o", str(out)]) == 0
    return out
