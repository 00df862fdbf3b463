"""The codec's fast paths agree with its standard path: same events, same errors."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reducers as r
from eventstore._store._codec import (
    FAST_DECODERS,
    _first_use,
    _from_payload,
    converter,
    flat_events,
    from_payload,
    to_payload,
    unstructurer,
)
from reducers._json import FAST
from tests import strategies

# values of every JSON type, the edges of each field's domain drawn often
values = st.one_of(
    st.integers(min_value=-5, max_value=5),
    st.sampled_from([2**63 - 1, 2**63, 2**64, -(2**63), True, False, None, 1.0, 0.5]),
    st.sampled_from(["", "tool_call", "file_handle", "subprocess", "rejected", "turns", "a/b"]),
    st.sampled_from(["tokens", "spill", "halt", "0" * 64, "\ud800", "\x00", "/abs", "a/../b"]),
    strategies.names,
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@st.composite
def flat_payloads(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A flat event type and a dict for it: its fields (some missing, some extra) with
    values of any type."""
    name = draw(st.sampled_from(sorted(flat_events())))
    fields = [a.name for a in attrs.fields(flat_events()[name])]
    data = {f: draw(values) for f in fields if draw(st.integers(0, 9))}
    if draw(st.integers(0, 9)) == 0:
        data[draw(st.sampled_from(["extra", "seq"]))] = draw(values)
    return name, data


def _outcome(decode: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "event", decode(*args)
    except Exception as exc:
        return type(exc).__name__, str(exc)


class TestFastPaths:
    @given(strategies.events())
    def test_round_trip(self, event: r.Event) -> None:
        """Every event decodes from its payload to itself (fast path and standard path)."""
        payload = to_payload(event)
        assert from_payload(type(event).__name__, payload) == event
        assert _from_payload(type(event).__name__, payload) == event

    @given(strategies.events())
    def test_unstructure_is_cattrs(self, event: r.Event) -> None:
        """The generated unstructure of flat events gives what cattrs gives."""
        assert unstructurer(type(event))(event) == converter.unstructure(event)

    @given(flat_payloads())
    def test_payloads_decode_as_the_standard_path_decodes(
        self, case: tuple[str, dict[str, Any]]
    ) -> None:
        """Any JSON object, valid or not, decodes to the same event or fails with the same
        error through from_payload as through the standard library's path."""
        name, data = case
        try:
            payload = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except UnicodeEncodeError:  # pragma: no cover - json escapes lone surrogates
            return
        assert _outcome(from_payload, name, payload) == _outcome(_from_payload, name, payload)

    @pytest.mark.skipif(not FAST, reason="orjson (the [fast] extra) is not installed")
    @given(flat_payloads())
    def test_fast_decoders_agree_with_the_attrs_classes(
        self, case: tuple[str, dict[str, Any]]
    ) -> None:
        """A generated decoder returns the event the class builds from the same dict, and
        returns nothing (or raises) exactly when the class refuses it."""
        name, data = case
        kind, event = _outcome(lambda d: flat_events()[name](**d), data)
        fast_kind, fast = _outcome(FAST_DECODERS[name], data)
        if kind == "event":
            assert (fast_kind, fast) == ("event", event)
            assert hash(fast) == hash(event)
        else:
            assert fast_kind != "event" or fast is None

    @pytest.mark.parametrize(
        "payload",
        [
            '{"at":18446744073709551616}',  # beyond 64 bits: orjson reads a float
            '{"at":1e3}',
            '{"at":NaN}',
            '{"at":-1}',
            '{"at":01}',
            "[1]",
            '{"at":1,"at":2}',
        ],
    )
    def test_odd_payloads_fail_or_pass_as_before(self, payload: str) -> None:
        """Payloads the two decoders read differently get the standard path's verdict."""
        assert _outcome(from_payload, "Checkpointed", payload) == _outcome(
            _from_payload, "Checkpointed", payload
        )

    def test_lone_surrogate_escape_is_refused_as_before(self) -> None:
        """An escaped lone surrogate (orjson refuses it) is the standard path's error."""
        payload = '{"call_id":"\\ud800","outcome":""}'
        assert _outcome(from_payload, "CallResolved", payload)[0] == "InvalidEvent"
        assert _outcome(from_payload, "CallResolved", payload) == _outcome(
            _from_payload, "CallResolved", payload
        )


@pytest.mark.skipif(not FAST, reason="orjson (the [fast] extra) is not installed")
class TestFirstUse:
    def test_importing_the_codec_generates_no_decoder(self) -> None:
        """A fresh process that imports the codec holds a first-use stand-in for every
        event type, and generates nothing until one is used."""
        code = (
            "from eventstore._store._codec import FAST_DECODERS as D\n"
            "print(sorted({f.__qualname__ for f in D.values()}))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        assert out.split() == ["['_first_use.<locals>.decode']"]

    def test_a_flat_type_puts_its_decoder_in_place(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The stand-in of a flat type decodes, and leaves its generated decoder in the
        table for the next row."""
        monkeypatch.setitem(FAST_DECODERS, "Checkpointed", _first_use("Checkpointed"))
        stand_in = FAST_DECODERS["Checkpointed"]
        assert stand_in({"at": 3}) == r.Checkpointed(at=3)
        assert FAST_DECODERS["Checkpointed"] is not stand_in
        assert FAST_DECODERS["Checkpointed"]({"at": 4}) == r.Checkpointed(at=4)

    def test_a_type_that_is_not_flat_leaves_the_table(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The stand-in of a type with nested fields decodes nothing and leaves, so its
        payloads take the standard path, which still decodes them."""
        monkeypatch.setitem(FAST_DECODERS, "CompactionRefused", _first_use("CompactionRefused"))
        event = r.CompactionRefused(
            proposal=r.Compacted(
                node_id="n1",
                tier=1,
                input_lo=0,
                input_hi=1,
                covers_lo=0,
                covers_hi=1,
                tail_start=1,
                summary="s",
                tokens=1,
            ),
            violations=[r.Violation(rule="C4", name="seam_hole", message="m")],
            action="halted",
        )
        payload = to_payload(event)
        assert FAST_DECODERS["CompactionRefused"](json.loads(payload)) is None
        assert "CompactionRefused" not in FAST_DECODERS
        assert from_payload("CompactionRefused", payload) == event

    def test_unstructurer_refuses_what_is_not_an_event(self) -> None:
        """A class that is not one of the event types has no unstructure function, even
        one named like an event."""
        fake = type("TurnAppended", (), {})
        with pytest.raises(r.InvalidEvent, match="not a tierlog event"):
            unstructurer(fake)
