"""The store's clock: UTC, ISO 8601 with microseconds, the form datetime.isoformat gives."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from eventstore._store._clock import utc_now


def _at(monkeypatch: pytest.MonkeyPatch, ns: int) -> str:
    monkeypatch.setattr(time, "time_ns", lambda: ns)
    return utc_now()


class TestUtcNow:
    @pytest.mark.parametrize(
        "ns",
        [0, 1_764_633_819_123_456_789, 1_764_633_819_999_999_999, 1_764_633_820_000_000_999],
    )
    def test_it_is_isoformat_s_text_to_the_microsecond(
        self, monkeypatch: pytest.MonkeyPatch, ns: int
    ) -> None:
        """The text equals datetime.isoformat of the same instant, cut to microseconds."""
        micros = ns // 1_000
        want = datetime.fromtimestamp(micros // 10**6, UTC).replace(microsecond=micros % 10**6)
        assert _at(monkeypatch, ns) == want.isoformat(timespec="microseconds")

    def test_a_new_second_is_formatted_anew(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The date and time cached for one second are not reused for the next."""
        first = _at(monkeypatch, 1_764_633_819_999_999_000)
        second = _at(monkeypatch, 1_764_633_820_000_001_000)
        assert (first, second) == (
            "2025-12-02T00:03:39.999999+00:00",
            "2025-12-02T00:03:40.000001+00:00",
        )

    def test_the_text_sorts_as_the_time_does(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Fixed width, so a recorded_at column sorts in time order as plain text."""
        times = [1_000_000_000, 999_999_000, 1_764_633_819_000_001_000, 9_999_999_999_000_000_000]
        texts = [_at(monkeypatch, ns) for ns in times]
        assert sorted(texts) == [texts[i] for i in sorted(range(4), key=times.__getitem__)]
