"""The value ``decide`` hands back: the events to commit, and what follows from them."""

from __future__ import annotations

from typing import Generic, TypeVar

import attrs

from reducers import Event, JournalError, SessionState

R = TypeVar("R")


@attrs.frozen(kw_only=True)
class Decision(Generic[R]):
    """The events to commit, the state after them, the command's result, and the error
    to raise once they are committed (a refusal is recorded, then raised)."""

    events: tuple[Event, ...]
    state: SessionState
    result: R
    error: JournalError | None = None
