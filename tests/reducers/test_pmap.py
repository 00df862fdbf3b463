"""PMap: versions that share one dict never change, whatever is written after them."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reducers._pmap import PMap, PMapWriter

keys = st.sampled_from("abcdef")
ops = st.lists(
    st.one_of(
        st.tuples(st.just("set"), keys, st.integers(0, 9)),
        st.tuples(st.just("pop"), keys),
        st.tuples(st.just("freeze")),
        st.tuples(st.just("read"), st.integers(0, 50)),
        st.tuples(st.just("branch"), st.integers(0, 50)),
        st.tuples(st.just("abort")),
        st.tuples(st.just("close")),
    ),
    max_size=60,
)


def _check(version: PMap[str, int], want: dict[str, int]) -> None:
    assert dict(version.items()) == want
    assert version == want
    assert len(version) == len(want)
    assert sorted(version) == sorted(want)
    for key in "abcdef":
        assert (key in version) == (key in want)
        assert version.get(key) == want.get(key)
        if key in want:
            assert version[key] == want[key]


class TestPMap:
    @given(ops)
    def test_every_version_keeps_its_items(self, steps: list[tuple[Any, ...]]) -> None:
        """Writes, freezes, aborts, releases and branches from old versions: every
        version read at any time holds exactly the items it was frozen with."""
        base: PMap[str, int] = PMap.of({"a": 1})
        held: list[tuple[PMap[str, int], dict[str, int]]] = [(base, {"a": 1})]
        writer, model = PMapWriter(base), {"a": 1}
        last = (base, {"a": 1})  # what an abort goes back to
        for step in steps:
            if step[0] == "set":
                writer[step[1]] = step[2]
                model[step[1]] = step[2]
            elif step[0] == "pop":
                assert writer.pop(step[1], None) == model.pop(step[1], None)
            elif step[0] == "freeze":
                last = (writer.freeze(), dict(model))
                held.append(last)
            elif step[0] == "read":
                _check(*held[step[1] % len(held)])
            elif step[0] in ("branch", "close", "abort"):
                if step[0] == "abort":
                    writer.abort()
                    version, items = last
                else:
                    version, items = writer.close(), dict(model)
                    held.append((version, items))
                if step[0] == "branch":
                    version, items = held[step[1] % len(held)]
                writer, model = PMapWriter(version), dict(items)
                last = (version, dict(items))
            assert dict(writer.items()) == model
        for version, items in held:
            _check(version, items)

    def test_two_writers_from_one_version_do_not_see_each_other(self) -> None:
        """A second writer of a claimed family works on a copy."""
        base: PMap[str, int] = PMap.of({"a": 1})
        one, two = PMapWriter(base), PMapWriter(base)
        one["b"] = 2
        two["c"] = 3
        assert (dict(one.close()), dict(two.close()), dict(base)) == (
            {"a": 1, "b": 2},
            {"a": 1, "c": 3},
            {"a": 1},
        )

    def test_read_only(self) -> None:
        """A version cannot be written."""
        version: PMap[str, int] = PMap.of({"a": 1})
        with pytest.raises(TypeError):
            version["a"] = 2  # type: ignore[index]

    def test_an_old_version_read_from_another_thread_while_a_writer_writes(self) -> None:
        """A thread reading a version frozen earlier sees its items while the writer goes
        on writing the shared dict."""
        writer: PMapWriter[int, int] = PMapWriter(PMap.of({}))
        for i in range(100):
            writer[i] = i
        frozen = writer.freeze()
        seen: list[dict[int, int]] = []

        def read() -> None:
            seen.extend(dict(frozen.items()) for _ in range(50))

        reader = threading.Thread(target=read)
        reader.start()
        for i in range(100, 5_000):
            writer[i % 150] = -i
        reader.join()
        assert all(items == {i: i for i in range(100)} for items in seen)
