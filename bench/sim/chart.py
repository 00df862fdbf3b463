"""A hand-written SVG chart of divergence and fallback rates against the drop rate.

One panel per setting; solid lines are divergent resumes, dashed lines raw
fallbacks, per resume; one colour per arm. No plotting library: the same rows
give the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.sim.sweep import Row

W, H = 360, 260  # one panel
LEFT, RIGHT, TOP, BOTTOM = 60, 16, 40, 46
# drawn in this order: tierlog last, on top of the others where lines meet at 0%
COLORS = {
    "baseline": "#c0392b",
    "retell": "#d68910",
    "tierlog-fallback": "#2e8b57",
    "tierlog": "#1f5fa8",
}
SERIES = (("divergence_rate", "divergent resumes", ""), ("fallback_rate", "raw fallbacks", "6 4"))


def _x(drop: float, top: float) -> float:
    return LEFT + (W - LEFT - RIGHT) * (drop / top if top else 0.0)


def _y(rate: float) -> float:
    return TOP + (H - TOP - BOTTOM) * (1.0 - rate)


def _panel(setting: str, rows: Sequence[Row], dx: int) -> list[str]:
    drops = sorted({r.drop_rate for r in rows})
    top = drops[-1] or 1.0
    out = [f'<g transform="translate({dx},0)">']
    out.append(
        f'<text x="{W / 2:.0f}" y="22" text-anchor="middle" font-weight="bold">{setting}</text>'
    )
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = _y(tick)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:.0%}</text>')
    for d in drops:
        x = _x(d, top)
        out.append(f'<text x="{x:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{d:.0%}</text>')
    out.append(
        f'<text x="{W / 2:.0f}" y="{H - 10}" text-anchor="middle">summarizer drop rate</text>'
    )
    mid = (TOP + H - BOTTOM) / 2
    out.append(
        f'<text x="14" y="{mid:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {mid:.0f})">share of resumes</text>'
    )
    for arm, color in COLORS.items():
        mine = sorted((r for r in rows if r.arm == arm), key=lambda r: r.drop_rate)
        for field, _, dash in SERIES:
            pts = [(_x(r.drop_rate, top), _y(float(r.to_json()[field]))) for r in mine]
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            style = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{style}/>'
            )
            out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in pts]
    out.append("</g>")
    return out


def _legend(y: int) -> list[str]:
    """One legend row per arm: its divergence line, then its fallback line."""
    out = []
    for arm, color in COLORS.items():
        x = LEFT
        for _, label, dash in SERIES:
            style = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(
                f'<line x1="{x}" y1="{y}" x2="{x + 28}" y2="{y}" stroke="{color}" '
                f'stroke-width="2"{style}/>'
            )
            out.append(f'<text x="{x + 34}" y="{y + 4}">{arm}: {label}</text>')
            x += 300
        y += 18
    return out


def render(rows: Sequence[Row]) -> str:
    """The SVG text for ``rows`` (one panel per setting, in row order)."""
    settings = list(dict.fromkeys(r.setting for r in rows))
    width, height = W * len(settings), H + 18 * len(COLORS) + 10
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for i, setting in enumerate(settings):
        body += _panel(setting, [r for r in rows if r.setting == setting], i * W)
    body += _legend(H + 12)
    body.append("</svg>")
    return "\n".join(body) + "\n"
