"""The value ``decide`` hands back: the events to commit, and what follows from them;
and ``maker``, the positional constructor the commit path builds its values with."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import attrs

from reducers import Event, JournalError, SessionState

R = TypeVar("R")
T = TypeVar("T", bound=attrs.AttrsInstance)


@attrs.frozen(kw_only=True)
class Decision(Generic[R]):
    """The events to commit, the state after them, the command's result, and the error
    to raise once they are committed (a refusal is recorded, then raised)."""

    events: tuple[Event, ...]
    state: SessionState
    result: R
    error: JournalError | None = None


def maker(cls: type[T]) -> Callable[..., T]:
    """A constructor of the frozen, slotted attrs class ``cls`` that takes every field
    by keyword and stores each straight into its slot. It skips what makes the
    generated ``__init__`` slow on a hot path (one frozen ``object.__setattr__`` call
    a field), so it is refused (TypeError) for a class whose ``__init__`` does
    anything else: a validator, a converter, a field left out of ``__init__``, a pre-
    or post-init step, a slot that is not a field (a cached hash). Defaults are not
    filled in: every field is passed. What it makes equals, hashes and stays as frozen
    as what ``cls(...)`` makes."""
    fields = attrs.fields(cls)
    names = [f.name for f in fields]
    checked = [f for f in fields if not f.init or f.validator or f.converter]
    steps = [s for s in ("__attrs_pre_init__", "__attrs_post_init__") if hasattr(cls, s)]
    slotted = {s for k in cls.__mro__ for s in k.__dict__.get("__slots__", ())}
    if checked or steps or slotted - {"__weakref__"} != set(names) or cls.__dictoffset__:
        raise TypeError(f"{cls.__name__}: its __init__ does more than store its fields")
    slots = {}
    for name in names:
        slot = next(k.__dict__[name] for k in cls.__mro__ if name in k.__dict__)
        if not isinstance(slot, types.MemberDescriptorType):
            raise TypeError(f"{cls.__name__}.{name} is not a slot")
        slots[f"_set_{name}"] = slot.__set__
    body = "".join(f"\n    _set_{name}(self, {name})" for name in names)
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls, **slots}
    exec(f"def make(*, {', '.join(names)}):\n    self = _new(_cls){body}\n    return self", scope)
    make: Callable[..., T] = scope["make"]
    return make
