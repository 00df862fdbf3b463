"""The report as one self-contained HTML file: inline CSS, inline script, data as JSON.

The stylesheet and the script are the package's data files ``report.css`` and
``report.js`` (read with :mod:`importlib.resources`, so they ship in the wheel). The
script reads each session's JSON block and draws its timeline as SVG; it computes the
state at a version exactly as ``eventstore._report._timeline.view_at`` does.

Nothing here trusts session content. Text that goes into markup passes through
``html.escape``, its bidi and other control characters shown as escapes
(:func:`visible`: an RLO in a key cannot reverse the page's own words); each
session's data is a ``<script type="application/json">`` block whose ``<``, ``>``,
``&`` and U+2028/U+2029 are written as JSON escapes (so no ``</script>`` can end
it), and the script puts text in the page with ``textContent`` only. A
Content-Security-Policy allows exactly the inline script and style shipped here (by
sha256) and nothing from the network.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Iterator, Sequence
from importlib import resources
from typing import Any, Final

import attrs

from eventstore._location import redact_text
from eventstore._ops import Review, SessionAudit
from eventstore._report._build import TEXT
from eventstore._report._collect import Report, SessionReport
from eventstore._report._spans import cut
from eventstore._report._timeline import Timeline
from eventstore._store import ChainProblem, SessionSummary

_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_JSON_UNSAFE = str.maketrans(_JSON_ESCAPES)


def _asset(name: str) -> str:
    """A data file of this package as the page inlines it (after a newline: the CSP
    hashes name the exact text between the tags)."""
    return "\n" + resources.files("eventstore._report").joinpath(name).read_text(encoding="utf-8")


CSS: Final = _asset("report.css")
SCRIPT: Final = _asset("report.js")

# Bidi controls and the other invisible control characters (tab, newline and carriage
# return excepted), as a regular expression character class; report.js's ``CONTROLS``
# is the same class (a test checks), so the page and the script show the same escapes.
CONTROL_CLASS: Final = (
    r"\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f"
    r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
)
_CONTROLS = re.compile(f"[{CONTROL_CLASS}]")


def visible(text: str) -> str:
    """``text`` with its bidi controls (U+202E would reverse the page's own words after
    it) and other invisible control characters written as escapes, as the page's script
    shows them: ``\u2039U+202E\u203a``."""
    return _CONTROLS.sub(lambda m: f"\u2039U+{ord(m.group()):04X}\u203a", text)


def _text(value: str) -> str:
    """Session text as page text: cut at ``TEXT`` characters, control characters visible,
    markup escaped."""
    return html.escape(visible(cut(value, TEXT)))


_LONG_WORD = re.compile(r"[^\s<>]{40,}")


def _td(cell: str) -> str:
    """A table cell; one holding a word of 40 characters or more may break it anywhere
    (only that one: short words in narrow columns stay whole)."""
    long = _LONG_WORD.search(re.sub(r"<[^>]*>", " ", cell))
    return f'<td class="wrap">{cell}</td>' if long else f"<td>{cell}</td>"


_DATA: Final = '<script type="application/json" class="data">'


def script_json(data: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: it cannot close or comment it;
    each text in it with a URL's password hidden (``redact_text``, before encoding:
    the encoded text's escapes are no place to cut)."""
    text = json.dumps(_redacted(data), ensure_ascii=False, separators=(",", ":"))
    return text.translate(_JSON_UNSAFE)


def _redacted(value: Any) -> Any:
    """``value`` with every string in it passed through ``redact_text``."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(v) for v in value]
    return value


def _delta(values: Sequence[int]) -> list[int]:
    return [b - a for a, b in zip((0, *values), values, strict=False)]


LISTED_CALLS: Final = 200  # up to this many call events, the events list shows them


def timeline_data(t: Timeline, at: int, chain: ChainProblem | None = None) -> dict[str, Any]:
    """The timeline as the page's script reads it: long integer columns delta-coded; the
    keys of banded obligations only for events the list shows (calls while few)."""
    types = sorted(set(t.event_types))
    calls = sum(name in ("CallOpened", "CallResolved") for name in t.event_types)
    listed = {"constraint", "negative_fact"} | ({"open_call"} if calls <= LISTED_CALLS else set())
    code = {name: chr(48 + i) for i, name in enumerate(types)}
    plain = attrs.asdict(t)
    for name in ("tok_starts", "turn_versions", "runs", "turn_info", "routine", "event_types"):
        del plain[name]
    return {
        **plain,
        "id": t.session_id,
        "at": at,
        "tok": _delta(t.tok_starts),
        "tv": _delta(t.turn_versions),
        "runs": [[r.lo, r.hi, r.truncated_at, r.spilled_at, r.withdrawn_at] for r in t.runs],
        "info": [[i.role, i.tokens, i.preview] for i in t.turn_info],
        "routine": [
            {
                "kind": b.kind,
                "lo": b.lo,
                "hi": b.hi,
                "raised": _delta(b.raised),
                "ended": _delta(b.ended),
                "keys": list(b.keys) if b.kind in listed else [],
            }
            for b in t.routine
        ],
        "types": types,
        "kinds": "".join(code[name] for name in t.event_types),
        "list_calls": calls <= LISTED_CALLS,
        "chain": None if chain is None else {"version": chain.version, "problem": chain.problem},
    }


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def render(report: Report) -> str:
    """The whole page."""
    e = _text
    policy = (
        f"default-src 'none'; script-src {_csp_hash(SCRIPT)}; style-src {_csp_hash(CSS)}"
        "; img-src 'none'; connect-src 'none'; form-action 'none'"
    )
    only = report.sessions[0].timeline.session_id if report.listing is None else None
    title = f"tierlog report: {report.journal}" + (f" / {only}" if only else "")
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(policy)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f'<header><h1>tierlog report <span class="db">{e(report.journal)}</span></h1>',
        f'<p class="meta">{len(report.sessions)} session(s). Pick a version with the slider or'
        " the event list; hover a mark for its details, click it to keep them.</p></header>",
        "<noscript><p>The timeline is drawn by the page's own inline script: enable"
        " JavaScript for this file. The audit tables below need none.</p></noscript>",
    ]
    if report.broken:
        parts += _tampered(report)
    if report.listing is not None:
        parts += _listing(report.listing, {p.session_id for p in report.broken})
    for s in report.sessions:
        parts += _session(s)
    page = (p if p.startswith(_DATA) else redact_text(p) for p in parts)  # data: script_json
    return "\n".join([*page, f"<script>{SCRIPT}</script></body></html>"])


def _tampered(report: Report) -> Iterator[str]:
    """The banner of a journal whose hash chain breaks: what the page shows from the
    first bad version on may have been edited outside tierlog."""
    e = _text
    yield '<div class="tampered" role="alert"><h2>This journal does not verify</h2><ul>'
    for p in report.broken:
        yield (
            f'<li>session <a href="#" data-open="{html.escape(p.session_id)}">'
            f"<code>{e(p.session_id)}</code></a>: the hash chain breaks at"
            f" <b>v{p.version}</b> ({e(p.problem)}). Events from v{p.version} on may have"
            " been edited outside tierlog: nothing this page shows from there on is"
            " verified.</li>"
        )
    yield (
        f"</ul><p><code>tierlog verify {e(report.journal)}</code> lists every finding.</p></div>"
    )


def _listing(rows: Sequence[SessionSummary], broken: set[str]) -> Iterator[str]:
    e = _text
    names = [a.name for a in attrs.fields(SessionSummary)]
    yield '<nav class="listing"><h2>Sessions</h2><table class="grid"><thead><tr>'
    yield "".join(f"<th>{e(n.replace('_', ' '))}</th>" for n in names) + "</tr></thead><tbody>"
    for row in rows:
        sid = row.session_id
        cells = [f'<a href="#" data-open="{html.escape(sid)}">{e(sid)}</a>']
        cells += [e(str(getattr(row, n))) for n in names[1:]]
        bad = row.refusals or row.invalidations or row.raw_fallbacks or sid in broken
        yield f'<tr class="{"bad" if bad else ""}">' + "".join(map(_td, cells))
        yield "</tr>"
    yield "</tbody></table></nav>"


def _config_line(t: Timeline) -> str:
    c = t.config
    if c is None:
        return f"{t.version} events, not started"
    return (
        f"{t.version:,} events, {t.turns:,} turns, positions in {t.unit}; window"
        f" {c.window_tokens:,} tokens, trigger {c.trigger_tokens:,}; floor {c.floor_span:,}"
        f" {c.floor_unit}; on unsafe: {c.on_unsafe}"
    )


_LEGEND = (
    ("r-resident", "resident turn"),
    ("r-summarised", "folded into a live summary"),
    ("r-truncated", "truncated (gone)"),
    ("r-spilled", "truncated, kept in a spill file"),
    ("r-withdrawn", "withdrawn: retracted or cleared by the runtime"),
    ("n-live t1", "live L1 summary"),
    ("n-live t2", "live L2 digest"),
    ("n-replaced", "replaced summary"),
    ("n-cleared", "summary cleared from the context"),
    ("refused", "refused compaction"),
    ("g-valid", "valid marker"),
    ("g-refused", "refused marker"),
    ("g-invalidated", "invalidated marker"),
    ("oc-open", "obligation in context"),
    ("oc-carried", "carried by a live summary"),
    ("oc-dropped", "dropped: out of context, carried by none"),
    ("oc-ended", "resolved / lifted"),
)


def _session(s: SessionReport) -> Iterator[str]:
    e = _text
    t = s.timeline
    yield f'<section class="session" data-session="{html.escape(t.session_id)}">'
    yield f"<h2>Session <code>{e(t.session_id)}</code></h2>"
    if s.chain is not None:
        yield (
            f'<p class="tampered" role="alert">Not verified from v{s.chain.version} on: the'
            f" hash chain breaks there ({e(s.chain.problem)}).</p>"
        )
    yield from _chain_alert(s.audit)
    yield f'<p class="config">{e(_config_line(t))}</p>'
    yield '<div class="controls"></div><div class="legend">'
    for cls, label in _LEGEND:
        yield f'<span><i class="sw {cls}"></i>{e(label)}</span>'
    yield '</div><div class="timeline"></div>'
    yield '<div class="below"><div class="details"><p class="hint">Click a mark (a turn, a'
    yield " summary, a refusal, a marker, an obligation, a withdrawal) to see its versions and"
    yield ' rules here.</p></div><div class="events"><h4>Events (turns left out)</h4></div></div>'
    yield from _audit(s.audit)
    data = script_json(timeline_data(t, s.at, s.chain))
    yield f"{_DATA}{data}</script></section>"


_SECTIONS = {
    "compaction_refusals": "Refused compactions",
    "marker_refusals": "Refused markers",
    "marker_invalidations": "Invalidated markers",
    "raw_fallbacks": "Resumes that fell back to the raw checkpoint",
    "evicted_obligations": "Obligations raised in a truncated range",
    "notes": "Notes: what tierlog guessed, skipped or fell back on reading the source",
}


def _chain_alert(sections: SessionAudit) -> Iterator[str]:
    """The source's chain not read whole (or joined by a guess), said above the timeline."""
    for n in sections.chain_notes:
        head = "Chain joined by a guess" if n.kind == "chain_fallback" else "CHAIN NOT READ WHOLE"
        where = "" if n.line is None else f" (line {n.line})"
        yield f'<p class="tampered" role="alert">{head}{where}: {_text(n.text)}</p>'


def _audit(sections: SessionAudit) -> Iterator[str]:
    e = _text
    total = sum(len(getattr(sections, key)) for key in _SECTIONS)
    yield '<div class="audit"><h3>Audit <small>(as <code>tierlog audit</code>, at the'
    yield f" latest version: {total} row(s))</small></h3>"
    for key, title in _SECTIONS.items():
        rows = [attrs.asdict(row) for row in getattr(sections, key)]
        yield f'<h4 class="{"bad" if rows and key != "evicted_obligations" else ""}">'
        yield f"{e(title)} ({len(rows)})</h4>"
        if rows:
            yield from _audit_table(key, rows)
    if sections.compaction_reviews:
        yield from _reviews(sections.compaction_reviews)
    yield "</div>"


def _reviews(reviews: Sequence[Review]) -> Iterator[str]:
    """Each reviewed compaction of an ingested session, and what its summary evidences."""
    e = _text
    yield f"<h4>Compactions of the ingested transcript ({len(reviews)})</h4>"
    names = list(reviews[0].columns())
    head = "".join(f"<th>{e(n.replace('_', ' '))}</th>" for n in names)
    yield f'<table class="grid audit-compaction_reviews"><thead><tr>{head}</tr></thead><tbody>'
    for r in reviews:
        cells = [_audit_cell(n, v) for n, v in r.columns().items()]
        yield "<tr>" + "".join(map(_td, cells)) + "</tr>"
        if lines := r.lines():
            items = "".join(
                f'<li class="{"" if x.ok else "bad"}"><b>{e(x.verdict)}</b>'
                f" <bdi>{e(x.subject)}</bdi>: <q><bdi>{e(x.quote)}</bdi></q></li>"
                for x in lines
            )
            yield f'<tr><td colspan="{len(names)}"><ul class="reviews">{items}</ul></td></tr>'
    yield "</tbody></table>"


def _audit_table(key: str, rows: list[dict[str, Any]]) -> Iterator[str]:
    e = _text
    names = [n for n in rows[0] if n != "violations"]
    head = "".join(f"<th>{e(n.replace('_', ' '))}</th>" for n in names)
    yield f'<table class="grid audit-{e(key)}"><thead><tr>{head}'
    yield ("<th>violations</th>" if "violations" in rows[0] else "") + "</tr></thead><tbody>"
    for row in rows:
        cells = [_audit_cell(n, row[n]) for n in names]
        if "violations" in row:
            cells.append(_violations(row["violations"]))
        carried = key != "evicted_obligations" or row["carried_by"]
        yield f'<tr class="{"" if carried else "bad"}">' + "".join(map(_td, cells))
        yield "</tr>"
    yield "</tbody></table>"


def _audit_cell(name: str, value: Any) -> str:
    e = _text
    if name == "version":
        return f'<a href="#" data-goto="{int(value)}">v{int(value)}</a>'
    if isinstance(value, (list, tuple)):
        return e(", ".join(map(str, value))) or "<b>nobody</b>"
    return e("" if value is None else str(value))


def _violations(raw: str) -> str:
    e = _text
    items = []
    for v in json.loads(raw):
        where = f" [{v['lo']}, {v['hi']})" if v.get("lo") is not None else ""
        message = f"<bdi>{e(v['message'])}</bdi>"
        items.append(f"<li><b>{e(v['rule'])}</b> {e(v['name'])}{e(where)}: {message}</li>")
    return f'<ul class="rules">{"".join(items)}</ul>'
