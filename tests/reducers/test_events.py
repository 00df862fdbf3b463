"""The event vocabulary's validators: storable text, 63-bit counts, spill handles."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reducers as r


def _canonical(handle: str) -> bool:
    """The SPEC's rule, spelled out: relative, '/'-separated, no empty/'.'/'..' part."""
    return (
        not handle.startswith("/")
        and "\\" not in handle
        and all(ord(c) >= 32 and ord(c) != 127 for c in handle)
        and all(part not in ("", ".", "..") for part in handle.split("/"))
    )


class TestHandles:
    @given(handle=st.text(st.sampled_from("ab./\\\x00\x7f"), min_size=1, max_size=12))
    def test_matches_the_rule(self, handle: str) -> None:
        """handle_problem accepts exactly the canonical relative paths."""
        assert (r.handle_problem(handle) is None) == _canonical(handle)

    def test_long_and_non_text_handles(self) -> None:
        """Over 1024 characters, a lone surrogate, or no string at all is a problem."""
        assert r.handle_problem("a" * 1025) is not None
        assert r.handle_problem("a/\ud800") is not None
        assert r.handle_problem(b"a") is not None


class TestRequire:
    @pytest.mark.parametrize("value", [None, True, -1, 2**63, 1.0, "1"])
    def test_count_rejects(self, value: object) -> None:
        """Not an int in 0..2**63-1 (bools included) is InvalidEvent naming the field."""
        with pytest.raises(r.InvalidEvent, match=r"^version:"):
            r.require_count("version", value)

    @pytest.mark.parametrize("value", [None, (1,), (1, 2, 3), "ab", {"a": 1}, (1, None)])
    def test_span_rejects(self, value: object) -> None:
        """Not a pair of counts is InvalidEvent naming the field."""
        with pytest.raises(r.InvalidEvent, match=r"^input"):
            r.require_span("input", value)

    def test_accepts(self) -> None:
        """Valid values come back as they are, spans as tuples."""
        assert r.require_count("n", 2**63 - 1) == 2**63 - 1
        assert r.require_span("input", [0, 3]) == (0, 3)
        assert r.require_name("id", "n1") == "n1"
        assert r.require_sequence("ids", ["a"]) == ("a",)

    @pytest.mark.parametrize("text", ["\ud800", "ok\udfff"])
    def test_lone_surrogates_are_invalid(self, text: str) -> None:
        """A string that cannot be UTF-8 encoded is rejected by every text field."""
        with pytest.raises(r.InvalidEvent, match="surrogate"):
            r.TurnAppended(index=0, role="u", content=text, tokens=1)
        with pytest.raises(r.InvalidEvent):
            r.Compacted(
                node_id="n1",
                tier=1,
                input_lo=0,
                input_hi=1,
                covers_lo=0,
                covers_hi=1,
                tail_start=1,
                summary="s",
                tokens=1,
                dispositions={text: "rejected"},
            )
