"""The HTML report: a timeline model of one session and the self-contained page that draws it."""

from __future__ import annotations

from eventstore._report._collect import collect
from eventstore._report._html import render

__all__ = [
    "collect",
    "render",
]
