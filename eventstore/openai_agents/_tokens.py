"""How many tokens the items a ``TierlogSession`` appends count.

An item counts about one token per four bytes of its JSON (``estimate``). The items a
model produced (``is_model_output``) count instead their share, by size, of the output
tokens the runner's usage reports for the responses not yet counted: ``UsageMeter``
remembers which responses it has counted, ignores a count that is not an integer >= 0
and clamps one above the session's ``window_tokens``, warning on the ``tierlog``
logger it is given either way. No journal, no SDK: the usage is read by attribute.
"""

from __future__ import annotations

from typing import Any, Final, cast

import structlog

from eventstore.openai_agents._items import OUTPUT_CALLS, Item
from reducers import SessionState

_NOT_MODEL_OUTPUT: Final = frozenset({"mcp_approval_response", "item_reference"})


def estimate(text: str) -> int:
    """About one token per four bytes of UTF-8, at least one."""
    return max(1, (len(text.encode("utf-8", "surrogatepass")) + 3) // 4)


def is_count(value: object) -> bool:
    """Whether ``value`` is a token count: an integer >= 0 (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_model_output(item: Item) -> bool:
    """Whether a model produced the item (an assistant message, a call, reasoning...)."""
    role = item.get("role")
    if role is not None:
        return bool(role == "assistant")
    kind = item.get("type")
    return (
        isinstance(kind, str)
        and kind not in _NOT_MODEL_OUTPUT
        and kind not in OUTPUT_CALLS
        and not kind.endswith("_output")
    )


def _split(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights`` (largest remainders), each at least 1."""
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    shares = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (shares[i] - exact[i], i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return [max(1, s) for s in shares]


class UsageMeter:
    """The output tokens the runner's usage reports, each response counted once."""

    def __init__(self, log: structlog.stdlib.BoundLogger) -> None:
        self._log = log
        self._entries: list[Any] | None = None
        self._seen = 0

    def reported(self, items: list[Item], wrapper: object) -> int | None:
        """The output tokens the runner's usage reports for responses not yet counted,
        or ``None`` (no model item, no usage, or a count that is not an integer >= 0)."""
        if not any(is_model_output(item) for item in items):
            return None
        entries = getattr(getattr(wrapper, "usage", None), "request_usage_entries", None)
        if not isinstance(entries, list):
            return None
        seen = self._seen if entries is self._entries else 0
        fresh = entries[seen:]
        self._entries, self._seen = entries, len(entries)
        counts = [getattr(e, "output_tokens", None) for e in fresh]
        junk = [c for c in counts if c is not None and not is_count(c)]
        if junk:
            self._log.warning(
                "usage_ignored", output_tokens=repr(junk[0])[:80], reason="not an integer >= 0"
            )
            return None
        return sum(cast(int, c) for c in counts if c is not None)

    def tokens(
        self, state: SessionState, items: list[Item], texts: list[str], reported: int | None
    ) -> list[int]:
        """Per item: its share of the new responses' output tokens, else an estimate.

        A reported count above the session's ``window_tokens`` is clamped to it: one
        response cannot put more in the context than the context holds."""
        tokens = [estimate(text) for text in texts]
        if not reported:
            return tokens
        window = state.config.window_tokens if state.config is not None else reported
        if reported > window:
            self._log.warning("usage_clamped", output_tokens=reported, window_tokens=window)
            reported = window
        produced = [i for i, item in enumerate(items) if is_model_output(item)]
        shares = _split(reported, [tokens[i] for i in produced])
        for i, share in zip(produced, shares, strict=True):
            tokens[i] = share
        return tokens
