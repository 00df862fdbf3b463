"""Canonical JSON, and the fast encoder that writes the same bytes.

The canonical form is what the standard library writes with sorted keys, no
whitespace and ``ensure_ascii=False``, as UTF-8: the bytes tierlog hashes.
``orjson`` (the ``fast`` extra), when installed, writes exactly these bytes for
every value tierlog encodes (strings, integers up to 64 bits, booleans, null,
lists and objects with string keys; tierlog records no float) about ten times
faster, and is used for them. ``tests/test_json.py`` compares the two byte for
byte. Anything orjson refuses (a bigger integer, another type) falls back to the
standard library. ``canonical_json`` itself stays the standard library's, for any
JSON data (floats included); ``canonical_bytes`` is for the data tierlog builds.
``fast_dumps`` is ``canonical_bytes`` without the fallback (it raises
``TypeError`` where orjson does), for loops that have a slow path of their own.
``fast_loads`` is orjson's decoder: its callers take its result only when the
event it decodes to passes every check, and otherwise decode again with ``json``,
so every error reads as before.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(data: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the bytes tierlog hashes (any JSON data)."""
    return _CANONICAL.encode(data).encode()


try:
    import orjson
except ImportError:  # pragma: no cover - the [fast] extra is installed by make install
    FAST = False
    canonical_bytes: Callable[[Any], bytes] = canonical_json
    fast_dumps: Callable[[Any], bytes] = canonical_json
    fast_loads: Callable[[str | bytes], Any] = json.loads
    SORT = 0

    def raw_dumps(
        obj: Any, /, default: Callable[[Any], Any] | None = None, option: int | None = None
    ) -> bytes:
        """``fast_dumps``, called as orjson's ``dumps`` is."""
        return canonical_json(obj)
else:
    FAST = True
    _dumps = orjson.dumps
    _SORT = orjson.OPT_SORT_KEYS
    # ``raw_dumps(data, option=SORT)`` is ``fast_dumps(data)`` without the partial's
    # 0.13 µs a call, for hot loops (the chain walk, ``link_rows``)
    raw_dumps = orjson.dumps
    SORT = orjson.OPT_SORT_KEYS

    def canonical_bytes(data: Any) -> bytes:
        """``canonical_json(data)`` for data without floats, by orjson when it can."""
        try:
            return _dumps(data, option=_SORT)
        except TypeError:  # an integer beyond 64 bits, a type orjson does not take
            return canonical_json(data)

    fast_loads = orjson.loads
    fast_dumps = functools.partial(_dumps, option=_SORT)  # canonical_bytes, or TypeError
