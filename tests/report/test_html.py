"""The report page: self-contained, and no session content can become markup or script."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import eventstore
from eventstore._report._collect import collect
from eventstore._report._html import CONTROL_CLASS, CSS, SCRIPT, render, script_json, visible
from tests import transcripts
from tests.helpers import fill, new_session
from tests.timelines import long_text_session

HOSTILE = (
    '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    "<!-- \" ' & \u2028\u2029 <\u0000/script> \U0001f600 \u202e ltr"
)


class _Tags(HTMLParser):
    """Every start tag, and the text of each script element."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def _parse(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser


@pytest.fixture(name="hostile")
def _hostile(journal: eventstore.Journal) -> eventstore.Journal:
    s = new_session(journal, "evil")
    s.append_turn(HOSTILE, HOSTILE, 5)
    s.state_constraint(HOSTILE, HOSTILE)
    s.open_call(HOSTILE, "tool_call", HOSTILE)
    fill(s, 2)
    node = s.compact(
        tier=1,
        input=(0, 2),
        covers=(0, 2),
        tail_start=2,
        summary=HOSTILE,
        tokens=3,
        constraints=[HOSTILE],
        unresolved_ids=[HOSTILE],
    )
    s.emit_marker(node.node_id)
    s.truncate(0, 1, HOSTILE)
    return journal


class TestScriptJson:
    @pytest.mark.parametrize("text", [HOSTILE, "</SCRIPT >", "<!--", "a\u2028b", "&lt;"])
    def test_round_trips_without_markup_characters(self, text: str) -> None:
        """The encoded text has no < > & or line separators, and decodes to the original."""
        encoded = script_json({"k": text, text: [text]})
        assert not set(encoded) & {"<", ">", "&", "\u2028", "\u2029"}
        assert json.loads(encoded) == {"k": text, text: [text]}


_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


class TestVisible:
    @pytest.mark.parametrize("char", [*_BIDI, "\u0000", "\u001b", "\u007f", "\u0085", "\u009f"])
    def test_bidi_and_control_characters_become_escapes(self, char: str) -> None:
        """Each bidi control and invisible control character is written as U+XXXX."""
        assert visible(f"a{char}b") == f"a\u2039U+{ord(char):04X}\u203ab"

    @pytest.mark.parametrize(
        "text",
        ["tab\tnew\nline\r", "\u05e9\u05dc\u05d5\u05dd", "\U0001f469\u200d\U0001f4bb", "caf\u00e9"],
    )
    def test_other_text_is_kept(self, text: str) -> None:
        """Tabs, newlines, right-to-left letters and emoji joiners are text, not escapes."""
        assert visible(text) == text

    def test_the_page_writes_no_control_character(self, hostile: eventstore.Journal) -> None:
        """Outside the JSON data (which the script shows through the same escapes), no
        bidi or control character reaches the page; the audit shows them escaped."""
        s = hostile.session("evil")
        s.dispose("plan-A\u202e", "rejected", "\u202ereason")
        s.truncate(1, 3, "budget \u202e")
        page = render(collect(hostile))
        shown = re.sub(r'<script type="application/json".*?</script>', "", page, flags=re.S)
        shown = shown.replace(SCRIPT, "")
        assert re.findall(f"[{CONTROL_CLASS}]", shown.replace("\t", "").replace("\n", "")) == []
        assert "plan-A\u2039U+202E\u203a" in shown


class TestRender:
    def test_hostile_content_stays_data(self, hostile: eventstore.Journal) -> None:
        """Only the page's own script and the JSON blocks are scripts; no <img> appears."""
        page = render(collect(hostile))
        parsed = _parse(page)
        tags = [tag for tag, _ in parsed.tags]
        assert "img" not in tags
        assert tags.count("script") == 2
        data_blocks = [a for t, a in parsed.tags if t == "script" and a.get("type")]
        assert [a["type"] for a in data_blocks] == ["application/json"]
        data = json.loads(parsed.scripts[0])
        assert [n["summary"] for n in data["nodes"]] == [HOSTILE]
        assert data["info"][0][2] == HOSTILE
        assert parsed.scripts[1] == SCRIPT

    def test_audit_and_listing_are_escaped(self, hostile: eventstore.Journal) -> None:
        """The audit's reasons and keys appear escaped in the server-drawn tables."""
        s = hostile.session("evil")
        s.resume(next(iter(s.state.markers)))
        s.compact(tier=1, input=(0, 3), covers=(0, 3), tail_start=3, summary="x", tokens=1)
        page = render(collect(hostile, "evil"))
        body = page.split('<script type="application/json"')[0]
        assert "window.__pwned" in body  # the text is there, as text
        assert "<img" not in body
        assert "</script><script>" not in body

    def test_no_network_and_only_its_own_script_runs(self, hostile: eventstore.Journal) -> None:
        """No URL is fetched; the CSP names the inline script and style by their sha256."""
        page = render(collect(hostile))
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
        (policy,) = [
            str(a["content"])
            for t, a in _parse(page).tags
            if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
        ]
        for text in (SCRIPT, CSS):
            digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in policy
        assert "default-src 'none'" in policy

    def test_one_session_has_no_listing_every_session_has_one(
        self, journal: eventstore.Journal
    ) -> None:
        """With SESSION: that session alone; without: the sessions table and every session."""
        for sid in ("a", "b"):
            fill(new_session(journal, sid), 2)
        one, every = render(collect(journal, "b")), render(collect(journal))
        assert 'class="listing"' not in one
        assert one.count('class="session"') == 1
        assert 'class="listing"' in every
        assert every.count('class="session"') == 2
        assert every.count("data-open=") == 2


class TestSecrets:
    def test_a_password_in_agent_text_is_not_on_the_page(self, journal: eventstore.Journal) -> None:
        """A URL with a password in a turn, a summary or a call is drawn with it hidden,
        as ``log`` and ``sql`` print it; the page's own script and style are untouched."""
        s = new_session(journal, "leaky")
        url = "postgresql://app:hunter2@db.internal/fleet"
        s.append_turn("user", f"connect with {url} please", 10)
        s.open_call("c1", "tool_call", f"psql {url} -c 'select 1'")
        fill(s, 4)
        s.compact(tier=1, input=(0, 3), covers=(0, 3), tail_start=3, summary=url, tokens=1)
        page = render(collect(journal, "leaky"))
        assert "hunter2" not in page
        assert "postgresql://app:***@db.internal/fleet" in page
        assert SCRIPT in page
        assert CSS in page

    def test_a_password_keyword_before_a_quote_leaves_the_data_whole(
        self, journal: eventstore.Journal
    ) -> None:
        """``password=abc"...`` in a turn is hidden in the page's data, which still parses
        (a redaction of the encoded JSON would have cut its ``\\"`` escape in two)."""
        s = new_session(journal, "quoted")
        s.append_turn("user", 'use password=abc"def and go', 10)
        fill(s, 2)
        parsed = _parse(render(collect(journal, "quoted")))
        data = json.loads(parsed.scripts[0])
        assert data["info"][0][2] == 'use password=***"def and go'
        assert "abc" not in parsed.scripts[0]


class TestLongText:
    def test_long_texts_do_not_bloat_the_page(self, journal: eventstore.Journal) -> None:
        """Ten free texts of 100,000 characters each make a page of under 200 kB; no text
        between tags (the audit tables' cells) is longer than TEXT."""
        long_text_session(journal)
        page = render(collect(journal, "long"))
        assert len(page.encode()) < 200_000
        body = re.sub(r"<(script|style).*?</\1>", "", page, flags=re.S)
        assert max(len(text) for text in re.split(r"<[^>]*>", body)) < 1_100


class TestReviews:
    def test_an_ingested_compaction_is_reviewed_in_the_audit(
        self, journal: eventstore.Journal, tmp_path: Path
    ) -> None:
        """The real compaction's review lists each obligation its summary does not evidence."""
        path = transcripts.plain_copy(transcripts.LONG_SESSION, tmp_path)
        (review,) = eventstore.ingest(journal, path).compactions
        page = render(collect(journal))
        assert 'class="grid audit-compaction_reviews"' in page
        assert review.not_evidenced
        for o in review.not_evidenced:
            assert html.escape(o.key) in page
        assert page.count("NOT evidenced") == len(review.not_evidenced)
