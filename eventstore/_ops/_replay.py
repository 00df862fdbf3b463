"""Re-deriving recorded decisions: the engine behind ``verify`` and ``import``.

A recorded log is read back as *commands*: a compaction or a plain event with
the marker invalidations it caused, a refusal (of a compaction or a marker) with
the spill written before it, a re-tell turn with its ``Retold``, or a single event.
``command_of`` turns each group back into the command value
that produced it, and ``decide`` decides it again on the state before it, with
the same code the live session uses; ``verify`` compares the result to what was
recorded, ``import`` commits it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from eventstore._commands import Command, Compact, EmitMarker, Record, Resume, Retell, WriteSpill
from eventstore._decide import CAN_BREAK_MARKERS, decide, was_gated, would_invalidate
from eventstore._decision import Decision
from eventstore._effects import Effects, RecordedSpills, SpillCheck, SpillNotRecorded
from eventstore._ops._predates import hint, spill_hint
from invariants import KEYED_RULES, check_turn, validate
from reducers import (
    PLAIN_EVENTS,
    Compacted,
    CompactionRefused,
    Event,
    InvalidEvent,
    JournalError,
    MarkerEmitted,
    MarkerInvalidated,
    MarkerRefused,
    Resumed,
    Retold,
    SessionStarted,
    SessionState,
    Spilled,
    TurnAppended,
    fold,
)

# the events that may join the group before them (``_continues`` says when); events
# are of their classes exactly (``fold`` refuses a subclass), so a set of types says it
_JOINERS = frozenset({MarkerInvalidated, CompactionRefused, MarkerRefused, Retold})


def commands(events: Iterable[Event]) -> Iterator[list[Event]]:
    """Group a session's events into the commands that produced them."""
    group: list[Event] = []
    joiners = _JOINERS
    for event in events:
        if type(event) in joiners and _continues(group, event):
            group.append(event)
            continue
        if group:
            yield group
        group = [event]
    if group:
        yield group


def _continues(group: list[Event], event: Event) -> bool:
    if not group:
        return False
    if isinstance(event, MarkerInvalidated):
        return isinstance(group[0], (Compacted, *CAN_BREAK_MARKERS))
    if isinstance(event, CompactionRefused) and event.action == "spilled":
        return len(group) == 1 and isinstance(group[0], Spilled)
    if isinstance(event, MarkerRefused) and event.action == "spilled":
        return len(group) == 1 and isinstance(group[0], Spilled)
    if isinstance(event, Retold):
        return len(group) == 1 and isinstance(group[0], TurnAppended)
    return False


def command_of(group: list[Event]) -> tuple[Command[Any], Spilled | None]:
    """The command that produced ``group``, and the spill it recorded (if any)."""
    head = group[0]
    spilled = head if isinstance(head, Spilled) else None
    last = group[-1]
    if isinstance(last, CompactionRefused):
        return Compact.of(last.proposal, require_marker=was_gated(last)), spilled
    if isinstance(last, MarkerRefused):
        return EmitMarker(node_id=last.node_id), spilled
    if isinstance(last, Retold) and isinstance(head, TurnAppended):
        return Retell(max_chars=last.max_chars, tokens=head.tokens), None
    if isinstance(head, Retold):
        raise InvalidEvent("Retold without the turn it records")
    if isinstance(head, Compacted):
        return Compact.of(head), None
    if isinstance(head, (MarkerEmitted, MarkerRefused)):
        return EmitMarker(node_id=head.node_id), None
    if isinstance(head, Resumed):
        return Resume(marker_id=head.marker_id), None
    if spilled is not None:
        return WriteSpill(lo=spilled.lo, hi=spilled.hi), spilled
    if isinstance(head, MarkerInvalidated):
        raise InvalidEvent("MarkerInvalidated without the event that caused it")
    if isinstance(head, SessionStarted):
        raise InvalidEvent("SessionStarted in the middle of a session")
    return Record(event=head), None


def decide_again(
    state: SessionState, group: list[Event], effects: Effects, *, write_spills: bool = False
) -> Decision[Any]:
    """The decision the current code makes for ``group``'s command on ``state``.

    Ids are derived from ``state`` as the live session derives them. A spill due
    is the recorded one unless ``write_spills`` (``import`` writes real files).
    Raises :class:`InvalidEvent` when the command is not valid on ``state``.
    """
    command, spilled = command_of(group)
    return decide(command, state, effects if write_spills else RecordedSpills(effects, spilled))


@attrs.frozen(kw_only=True)
class Divergence:
    """A recorded decision the current reducers and invariants would not make."""

    session_id: str
    version: int
    problem: str
    check: str = "replay"


_RUN = 1024  # plain events folded at a time: a long run is not held in memory whole
_END: tuple[Any] = (None,)  # what follows a session's last event in ``divergences``


def divergences(
    session_id: str,
    events: Iterable[Event],
    effects: Effects,
    *,
    snapshot: tuple[int, str] | None = None,
) -> Iterator[Divergence]:
    """Replay ``events`` from version 1, re-deciding each command on the state before it;
    yield where the log and the decision differ.

    Runs of plain events are validated and folded in one pass (each checked for the
    invalidations it would bring); decisions are re-derived one by one.
    Stops at the first divergence; a bad spill file does not stop it.
    ``snapshot`` (version, sha256) is compared with the replayed state at that version.
    """
    state, plain, plain_types, joiners = SessionState(), [], PLAIN_EVENTS, _JOINERS
    watch = snapshot[0] if snapshot else -1
    room = _room(state, watch)
    check = effects.spill_checker()  # one pass: spills that share bases read once
    # ``commands`` written out: ``group`` is the command being gathered, ended by an
    # event that does not join it (``None`` after the last); a plain event alone goes
    # to ``plain``, and its list holds the next command (no list built a plain event)
    group: list[Any] = []  # events, and the ``None`` after the last
    for event in itertools.chain(events, _END):
        if type(event) in joiners and _continues(group, event):
            group.append(event)
            continue
        if len(group) == 1 and type(group[0]) in plain_types:
            plain.append(group[0])
            group[0] = event
            if len(plain) < room:
                continue
            command: list[Event] = []
        elif not group:  # the first event
            group.append(event)
            continue
        else:
            command, group = group, [event]
        state, found = _fold_plain(session_id, state, plain)
        plain = []
        if found is None and command:
            found = _redecide(session_id, state, command, effects)
        if found is not None:
            yield found
            return
        yield from _spill_problems(session_id, state.version + 1, command, check)
        state = fold(command, state)
        room = _room(state, watch)
        if snapshot and state.version == watch and state.sha256 != snapshot[1]:
            yield Divergence(
                session_id=session_id,
                version=watch,
                check="snapshot",
                problem="the snapshot disagrees with the replayed state",
            )
    _, found = _fold_plain(session_id, state, plain)  # ``None`` ends every command before
    if found is not None:
        yield found


def _room(state: SessionState, watch: int) -> int:
    """How many plain events to gather after ``state`` before folding them: a run of
    ``_RUN``, cut short to end at version ``watch`` (the snapshot's) when it is ahead."""
    ahead = watch - state.version
    return ahead if 0 < ahead < _RUN else _RUN


def _fold_plain(
    session_id: str, state: SessionState, plain: list[Event]
) -> tuple[SessionState, Divergence | None]:
    if not plain:
        return state, None
    markers = any(m.valid for m in state.markers.values())  # plain events make none

    def check(before: SessionState, event: Event) -> None:
        validate(before, event)
        if markers and (due := would_invalidate(before, event)):
            raise InvalidEvent(_mismatch([event], (event, *due)))

    try:
        keyed = None if markers else KEYED_RULES  # with a valid marker, ``check`` checks more
        return fold(plain, state, check=check, turn_check=check_turn, keyed_check=keyed), None
    except InvalidEvent:  # found in one pass; named event by event (a rare, slow path)
        for event in plain:
            try:
                check(state, event)
            except InvalidEvent as exc:
                return state, Divergence(
                    session_id=session_id, version=state.version + 1, problem=str(exc)
                )
            state = fold((event,), state)
        raise  # pragma: no cover - the same checks on the same events fail again


def _redecide(
    session_id: str, state: SessionState, command: list[Event], effects: Effects
) -> Divergence | None:
    version = state.version + 1
    try:
        if isinstance(command[0], SessionStarted):  # no command starts a session twice
            validate(state, command[0])
            return None
        derived = decide_again(state, command, effects).events
    except SpillNotRecorded as exc:
        problem = f"{exc}{spill_hint(command)}"
        return Divergence(session_id=session_id, version=version, problem=problem)
    except JournalError as exc:
        return Divergence(session_id=session_id, version=version, problem=str(exc))
    if tuple(command) != derived:
        return Divergence(
            session_id=session_id, version=version, problem=_mismatch(command, derived)
        )
    return None


def _spill_problems(
    session_id: str, version: int, command: list[Event], check: SpillCheck
) -> Iterator[Divergence]:
    for event in command:
        if isinstance(event, Spilled) and (problem := check(event)):
            yield Divergence(session_id=session_id, version=version, problem=problem, check="spill")


def _mismatch(recorded: list[Event], derived: tuple[Event, ...]) -> str:
    said = ", ".join(type(e).__name__ for e in recorded)
    now = ", ".join(type(e).__name__ for e in derived)
    if said != now:
        return f"recorded [{said}] but replay decides [{now}]{hint(recorded, derived)}"
    for a, b in zip(recorded, derived, strict=True):
        if a != b:
            said = f"recorded {type(a).__name__} differs from replay: {a!r} vs {b!r}"
            return said + hint(recorded, derived)
    return "recorded and derived events differ"  # pragma: no cover - equal tuples never reach
