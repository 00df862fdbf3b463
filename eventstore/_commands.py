"""Commands: what a runtime asks of a session, as values.

One frozen class per command. ``decide(command, state, effects)`` turns each
into the events to commit; the live session builds them from its method
arguments, ``verify`` and ``import`` from the events they read back. The type
parameter is what the command hands back once committed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar

import attrs

from eventstore._values import Context, Retelling, Turn
from reducers import Compacted, Event, Marker, Node, SessionState, Spill

R = TypeVar("R")


class Command(Generic[R]):
    """A command whose committed result is an ``R``."""

    __slots__ = ()


def _events(value: Iterable[Event]) -> tuple[Event, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class Record(Command[None]):
    """Append one plain event (a call, a constraint, a negative fact, a truncation...)."""

    event: Event


@attrs.frozen(kw_only=True)
class Extend(Command[SessionState]):
    """Append plain events in order, each validated on the state before it."""

    events: tuple[Event, ...] = attrs.field(converter=_events)


@attrs.frozen(kw_only=True)
class AppendTurn(Command[Turn]):
    """Append one raw L0 turn at the next index."""

    role: str
    content: str
    tokens: int


@attrs.frozen
class Checkpoint(Command[int]):
    """Record a raw-log checkpoint at the log's end."""


@attrs.frozen(kw_only=True)
class WriteSpill(Command[Spill]):
    """Copy the raw range ``[lo, hi)`` to a spill and record it."""

    lo: int
    hi: int


def _dispositions(value: Mapping[str, str] | None) -> Mapping[str, str]:
    return {} if value is None else value


@attrs.frozen(kw_only=True)
class ClearContext(Command[None]):
    """Take every turn and live summary out of the working context; the log keeps them."""

    reason: str = ""


@attrs.frozen(kw_only=True)
class Compact(Command[Node | None]):
    """Propose a summary node; its id is derived from the state it is decided on.

    ``require_marker`` also refuses a node a marker could not be emitted on (M1, M2).
    """

    tier: int
    input_lo: int
    input_hi: int
    covers_lo: int
    covers_hi: int
    tail_start: int
    summary: str
    tokens: int
    dispositions: Mapping[str, str] = attrs.field(factory=dict, converter=_dispositions)
    resolved_ids: tuple[str, ...] = ()
    unresolved_ids: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()
    require_marker: bool = False

    def proposal(self, node_id: str) -> Compacted:
        """The ``Compacted`` event this command proposes (validated)."""
        fields: dict[str, Any] = attrs.asdict(self, recurse=False)
        del fields["require_marker"]
        return Compacted(node_id=node_id, **fields)

    @classmethod
    def of(cls, proposal: Compacted, *, require_marker: bool = False) -> Compact:
        """The command that proposed ``proposal`` (its node id is derived again)."""
        fields = attrs.asdict(proposal, recurse=False)
        del fields["node_id"]
        return cls(**fields, require_marker=require_marker)


@attrs.frozen(kw_only=True)
class Retell(Command[Retelling | None]):
    """Append one ``system`` turn re-telling what the working context owes, at most
    ``max_chars`` characters (``tokens``: its size, estimated when ``None``)."""

    max_chars: int | None = None
    tokens: int | None = None


@attrs.frozen(kw_only=True)
class EmitMarker(Command[Marker | None]):
    """Emit a recovery marker on a node (refused when M1-M3 fail)."""

    node_id: str


@attrs.frozen(kw_only=True)
class Resume(Command[Context]):
    """Resume from a marker: the digest, or the raw checkpoint, wholesale."""

    marker_id: str
