"""The store's clock: the one place tierlog reads the time of day."""

from __future__ import annotations

import time
from datetime import UTC, datetime

_second: tuple[int, str] = (-1, "")  # the last second utc_now formatted, and its text


def utc_now() -> str:
    """The store's clock: UTC, ISO 8601, microseconds (``datetime.isoformat``'s form,
    ``2026-11-29T05:23:39.123456+00:00``; the date and time are formatted once a second)."""
    global _second
    micros = time.time_ns() // 1000
    second, fraction = divmod(micros, 1_000_000)
    last, text = _second
    if second != last:
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second = (second, text)
    return f"{text}.{fraction:06d}+00:00"
