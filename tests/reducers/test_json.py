"""Canonical JSON: orjson writes the bytes the standard library writes, or is not used."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import eventstore
import reducers as r
from eventstore._store._chain import chain_hash, link_rows
from eventstore._store._codec import SCHEMA_VERSION, converter, hash_bytes, to_payload
from reducers._json import FAST, canonical_bytes, canonical_json, fast_loads
from tests import strategies
from tests.helpers import TURNS

pytestmark = pytest.mark.skipif(not FAST, reason="orjson (the [fast] extra) is not installed")

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "journal-0.1"

# every code point that is not a surrogate, the awkward ones drawn often
awkward = st.sampled_from(
    [
        *map(chr, range(0x20)),
        *("\x7f", "\x80", "\x9f", "\u2028", "\u2029", "\ufeff", "\uffff"),
        *("\U00010000", "\U0001f600", "\U0010ffff", "/", "<", ">", "&", '"', "\\", "'", "é"),
    ]
)
text = st.text(st.one_of(awkward, strategies.chars), max_size=30)
integers = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.sampled_from([0, 2**63 - 1, 2**63, 2**64 - 1, -(2**63)]),
    st.integers(min_value=2**64, max_value=2**80),  # orjson refuses them: the fallback writes
)


def _json(scalars: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(text, inner, max_size=4)
            | st.tuples(inner, inner)
        ),
        max_leaves=12,
    )


# JSON data of the kind tierlog encodes: no float (tierlog records none)
data = _json(st.none() | st.booleans() | integers | text)
# ... and of the kind it stores: integers within 64 bits
stored = _json(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | text
)


class TestCanonicalBytes:
    @given(data)
    def test_same_bytes_as_the_standard_library(self, value: Any) -> None:
        """orjson's sorted compact UTF-8 is the standard library's canonical form, byte
        for byte: control characters, U+2028/2029, astral planes, big integers included."""
        assert canonical_bytes(value) == canonical_json(value)

    @pytest.mark.parametrize(
        "value",
        [
            {"s": "".join(map(chr, range(0x20))) + "\x7f\u2028\u2029/<>&'\"\\"},
            {"\uffff": 1, "\U00010000": 2, "é": 3, "Z": 4, "": 5},  # code point key order
            {"n": [2**63 - 1, 2**64 - 1, -(2**63), 2**64, 10**30]},
            {"t": (1, "x"), "b": [True, False, None]},
        ],
    )
    def test_awkward_values(self, value: Any) -> None:
        """The cases where encoders usually differ write the same bytes."""
        assert canonical_bytes(value) == canonical_json(value)

    @given(stored)
    def test_fast_loads_reads_canonical_text_back(self, value: Any) -> None:
        """What the canonical encoder wrote decodes to what json.loads decodes (integers
        within 64 bits; a bigger one reads as a float, which no event field takes, so
        the codec's standard path decides: see TestCodec)."""
        encoded = canonical_json(value).decode()
        assert fast_loads(encoded) == json.loads(encoded)

    @given(strategies.events())
    def test_event_payloads_are_unchanged(self, event: r.Event) -> None:
        """Every event's payload is the 0.1 payload: the standard encoder over cattrs."""
        assert to_payload(event) == canonical_json(converter.unstructure(event)).decode()


class TestJournalsWrittenBefore:
    def test_every_stored_payload_reencodes_to_its_bytes(self) -> None:
        """Each payload of the 0.1 journal is what both encoders write for its data, and
        each hash is sha256(prev_hash + hash_bytes) as 0.1 computed it."""
        with eventstore.open(FIXTURE / "journal-0.1.db", readonly=True) as journal:
            rows = [row for sid in journal.sessions() for row in journal.recorder.read(sid)]
        assert rows
        for row in rows:
            value = json.loads(row.payload)
            assert canonical_bytes(value).decode() == row.payload == to_payload(row.event)
            body = hash_bytes(
                session_id=row.session_id,
                version=row.version,
                type_name=row.type,
                schema_version=SCHEMA_VERSION,
                payload=row.payload,
                recorded_at=row.recorded_at,
            )
            digest = chain_hash(
                row.prev_hash,
                row.session_id,
                row.version,
                row.type,
                row.schema_version,
                row.payload,
                row.recorded_at,
            )
            assert digest == row.hash == hashlib.sha256(row.prev_hash.encode() + body).hexdigest()


class TestUnencodable:
    def test_linking_an_altered_event_is_invalid_event(self) -> None:
        """An event altered after its checks (a lone surrogate set behind the frozen
        class's back) is refused as InvalidEvent, a JournalError, where its row is
        made (it escaped as UnicodeEncodeError). Reading such a stored row stays a
        chain finding (canonical JSON itself still raises UnicodeEncodeError)."""
        event = r.TurnAppended(index=0, role="tool", content="x", tokens=3)
        object.__setattr__(event, "content", "lone \ud800")
        with pytest.raises(r.InvalidEvent, match="lone surrogate"):
            link_rows("s", 1, "0" * 64, [event], "2026-12-02T00:00:00.000000Z")
        with pytest.raises(UnicodeEncodeError):
            canonical_json({"content": event.content})

    def test_an_altered_event_in_a_long_batch_writes_nothing(self, tmp_path: Path) -> None:
        """Event 200 of 300, altered so: the batch is refused whole, the session goes on
        (on PostgreSQL the same rows stream into COPY: tests/postgres)."""
        with eventstore.open(tmp_path / "j.db") as journal:
            s = journal.start_session("s", TURNS)
            events: list[r.Event] = [
                r.TurnAppended(index=i, role="tool", content=f"t{i}", tokens=3) for i in range(300)
            ]
            object.__setattr__(events[200], "content", "lone \ud800")
            with pytest.raises(r.InvalidEvent):
                s.extend(events)
            assert journal.recorder.head("s").version == 1
            s.append_turn("tool", "after", 3)
            assert s.state.turns == 1
