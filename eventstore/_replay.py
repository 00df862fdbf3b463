"""Re-deriving recorded decisions: the engine behind ``verify`` and ``import``.

A recorded log is read back as *commands*: a compaction with the marker
invalidations it caused, a refusal with the spill written before it, or a
single event. Each command is decided again on the state before it, with the
same code the live session uses; ``verify`` compares the result to what was
recorded, ``import`` commits it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import attrs

from eventstore import _decide
from eventstore._session import Session
from eventstore._spills import Checker
from invariants import validate
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
    SessionState,
    Spilled,
    fold,
)


def commands(events: Iterable[Event]) -> Iterator[list[Event]]:
    """Group a session's events into the commands that produced them."""
    group: list[Event] = []
    for event in events:
        if _continues(group, event):
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
        return isinstance(group[0], Compacted)
    if isinstance(event, CompactionRefused) and event.action == "spilled":
        return len(group) == 1 and isinstance(group[0], Spilled)
    return False


def proposal_of(command: list[Event]) -> Compacted | None:
    """The compaction a command proposed, if it is one."""
    if isinstance(command[-1], CompactionRefused):
        return command[-1].proposal
    return command[0] if isinstance(command[0], Compacted) else None


def decide_again(
    session: Session,
    state: SessionState,
    command: list[Event],
    *,
    make_spill: _decide.MakeSpill | None = None,
) -> _decide.Decision:
    """The decision the current code makes for ``command`` on ``state``.

    Ids are derived from ``state`` as the live session derives them. Spills come
    from ``make_spill`` (``import`` writes real files) or, by default, from the
    recorded events (``verify`` writes nothing). Raises :class:`InvalidEvent`
    when the command is not valid on ``state``.
    """
    head = command[0]
    proposal = proposal_of(command)
    spill = make_spill or _recorded_spill(head)
    if proposal is not None:
        proposal = attrs.evolve(proposal, node_id=_decide.node_id_for(state))
        return _decide.compaction(
            state, proposal, checked_against=session.verified(state, proposal), make_spill=spill
        )
    if isinstance(head, (MarkerEmitted, MarkerRefused)):
        return _decide.marker(state, _decide.marker_id_for(state), head.node_id)
    if isinstance(head, Resumed):
        context = session.context_for(state, head.marker_id)
        return _decide.Decision(events=(context.event(),))
    if isinstance(head, MarkerInvalidated):
        raise InvalidEvent("MarkerInvalidated without the compaction that caused it")
    validate(state, head)
    if isinstance(head, Spilled):
        return _decide.Decision(events=(spill(state, head.lo, head.hi),))
    return _decide.Decision(events=(head,))


def _recorded_spill(head: Event) -> _decide.MakeSpill:
    def replay_spill(_: SessionState, lo: int, hi: int) -> Spilled:
        if not isinstance(head, Spilled) or (head.lo, head.hi) != (lo, hi):
            raise InvalidEvent(f"a spill of [{lo}, {hi}) is due here but none was recorded")
        return head

    return replay_spill


@attrs.frozen(kw_only=True)
class Divergence:
    """A recorded decision the current reducers and invariants would not make."""

    session_id: str
    version: int
    problem: str
    check: str = "replay"


def divergences(
    session: Session,
    events: Iterable[Event] | None = None,
    *,
    snapshot: tuple[int, str] | None = None,
) -> Iterator[Divergence]:
    """Replay ``events`` (the session's own by default) from version 1, re-deciding each
    command on the state before it; yield where the log and the decision differ.

    Runs of plain events are validated and folded in one pass; decisions are re-derived
    one by one. Stops at the first divergence; a bad spill file does not stop it.
    ``snapshot`` (version, sha256) is compared with the replayed state at that version.
    """
    state, plain = SessionState(), []
    watch = snapshot[0] if snapshot else -1
    check = session.journal.spills.checker()  # one pass: spills sharing bases read once
    for command in commands(session.events() if events is None else events):
        if len(command) == 1 and type(command[0]) in PLAIN_EVENTS:
            plain.append(command[0])
            if state.version + len(plain) != watch:
                continue
            command = []
        state, found = _fold_plain(session.id, state, plain)
        plain = []
        if found is None and command:
            found = _redecide(session, state, command)
        if found is not None:
            yield found
            return
        yield from _spill_problems(session.id, check, state.version + 1, command)
        state = fold(command, state)
        if snapshot and state.version == watch and state.sha256 != snapshot[1]:
            yield Divergence(
                session_id=session.id,
                version=watch,
                check="snapshot",
                problem="the snapshot disagrees with the replayed state",
            )
    _, found = _fold_plain(session.id, state, plain)
    if found is not None:
        yield found


def _fold_plain(
    session_id: str, state: SessionState, plain: list[Event]
) -> tuple[SessionState, Divergence | None]:
    if not plain:
        return state, None
    at = [state.version]

    def check(before: SessionState, event: Event) -> None:
        at[0] = before.version
        validate(before, event)

    try:
        return fold(plain, state, check=check), None
    except InvalidEvent as exc:
        return state, Divergence(session_id=session_id, version=at[0] + 1, problem=str(exc))


def _redecide(session: Session, state: SessionState, command: list[Event]) -> Divergence | None:
    version = state.version + 1
    try:
        derived = decide_again(session, state, command).events
    except JournalError as exc:
        return Divergence(session_id=session.id, version=version, problem=str(exc))
    if tuple(command) != derived:
        return Divergence(
            session_id=session.id, version=version, problem=_mismatch(command, derived)
        )
    return None


def _spill_problems(
    session_id: str, check: Checker, version: int, command: list[Event]
) -> Iterator[Divergence]:
    for event in command:
        if isinstance(event, Spilled) and (problem := check(event)):
            yield Divergence(session_id=session_id, version=version, problem=problem, check="spill")


def _mismatch(recorded: list[Event], derived: tuple[Event, ...]) -> str:
    said = ", ".join(type(e).__name__ for e in recorded)
    now = ", ".join(type(e).__name__ for e in derived)
    if said != now:
        return f"recorded [{said}] but replay decides [{now}]"
    for a, b in zip(recorded, derived, strict=True):
        if a != b:
            return f"recorded {type(a).__name__} differs from replay: {a!r} vs {b!r}"
    return "recorded and derived events differ"  # pragma: no cover - equal tuples never reach
