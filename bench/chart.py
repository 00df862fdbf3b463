"""The chart of ``bench/README.md``: each row's cost against the log's length, as SVG.

Every ``series`` of ``make bench``'s rows (commits; refusals and ingest from their
modules) is drawn relative to its first point (cost / cost at the shortest log), on
a logarithmic length axis, so that a flat line reads as flat whatever its unit. No
plotting library: the SVG is written by hand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape

W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 360, 60, 20, 30, 90
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def _series(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["series"] for r in rows if r.get("series") and len(r["series"]["points"]) > 1]


def svg(rows: Sequence[dict[str, Any]], title: str = "cost against log length") -> str:
    """The chart of every series in ``rows`` (an empty chart says there is none)."""
    series = _series(rows)
    xs = [p[0] for s in series for p in s["points"] if p[0] > 0] or [1, 10]
    ys = [p[1] / s["points"][0][1] for s in series for p in s["points"]] or [1.0]
    x0, x1 = math.log10(min(xs)), math.log10(max(xs)) + 1e-9
    y1 = max(2.0, math.ceil(max(ys) * 2) / 2)

    def at(x: float, y: float) -> tuple[float, float]:
        px = LEFT + (math.log10(x) - x0) / (x1 - x0) * (W - LEFT - RIGHT)
        return round(px, 1), round(TOP + (1 - y / y1) * (H - TOP - BOTTOM), 1)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}"'
        f' font-family="sans-serif" font-size="11">',
        f'<text x="{W / 2}" y="16" text-anchor="middle" font-size="13">{escape(title)}</text>',
        *_axes(at, xs, y1),
    ]
    for k, s in enumerate(series):
        colour, first = COLOURS[k % len(COLOURS)], s["points"][0][1]
        points = " ".join(f"{a},{b}" for a, b in (at(x, y / first) for x, y in s["points"]))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
        out += [f'<circle cx="{a}" cy="{b}" r="3" fill="{colour}"/>' for a, b in
                (at(x, y / first) for x, y in s["points"])]  # fmt: skip
        label = f"{s['label']} (1.0 = {first:g} at {s['points'][0][0]:,})"
        y = H - BOTTOM + 38 + 14 * k
        out.append(f'<rect x="{LEFT}" y="{y - 8}" width="12" height="3" fill="{colour}"/>')
        out.append(f'<text x="{LEFT + 18}" y="{y - 3}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _axes(at: Any, xs: list[float], y1: float) -> list[str]:
    lo, hi = at(min(xs), 0), at(max(xs), y1)
    out = [
        f'<line x1="{lo[0]}" y1="{lo[1]}" x2="{hi[0]}" y2="{lo[1]}" stroke="black"/>',
        f'<line x1="{lo[0]}" y1="{lo[1]}" x2="{lo[0]}" y2="{hi[1]}" stroke="black"/>',
        f'<text x="{(lo[0] + hi[0]) / 2}" y="{lo[1] + 30}" text-anchor="middle">'
        "log length (events, turns or lines: the series' own)</text>",
        f'<text x="14" y="{(lo[1] + hi[1]) / 2}" text-anchor="middle"'
        f' transform="rotate(-90 14 {(lo[1] + hi[1]) / 2})">cost / cost at the shortest</text>',
    ]
    for e in range(math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs))) + 1):
        if min(xs) <= 10**e <= max(xs):
            x = at(10**e, 0)[0]
            out.append(f'<text x="{x}" y="{lo[1] + 14}" text-anchor="middle">{10**e:,}</text>')
    steps = int(y1 * 2)
    for i in range(steps + 1):
        y = at(min(xs), i / 2)[1]
        grey = ' stroke-dasharray="4 3"' if i == 2 else ""
        out.append(f'<line x1="{lo[0]}" y1="{y}" x2="{hi[0]}" y2="{y}" stroke="#ccc"{grey}/>')
        out.append(f'<text x="{lo[0] - 6}" y="{y + 4}" text-anchor="end">{i / 2:g}</text>')
    return out
