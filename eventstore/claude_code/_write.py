"""Writing a planned transcript into its session, through the public Session API.

- each batch of turns with the events they raise through ``Session.extend``;
- a ``compact_boundary``: a tier-1 compaction over everything before it, its
  summary the text Claude Code resumed from, carrying what :mod:`_evidence` finds
  evidenced; then a marker on it. A refusal (C1-C5, M1-M3) is recorded, not raised;
- a block tierlog's hooks gave the agent: the re-tell it states (see :func:`_retell`).

``slots``: events to put at given versions between the plan's (the ingest positions
a session holds, so that writing a plan again gives the versions, and node ids,
the session has).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence

from eventstore._ops import carried_by
from eventstore._session import Session
from eventstore.claude_code import _transcript as cc
from eventstore.claude_code._plan import Plan, Retell, Step, estimate
from eventstore.claude_code._review import kept_by_claude_code
from invariants import MarkerInvalid, UnrecoverableCompactionError
from reducers import Event, InvalidArgument, InvalidEvent, TurnAppended

Slots = Mapping[int, Event]


def write(
    session: Session,
    plan: Plan,
    *,
    done: int = 1,
    ends: Sequence[int] = (),
    index: int = 0,
    slots: Slots | None = None,
) -> list[int]:
    """Append ``plan`` to ``session``; refusals are recorded, not raised. Returns the
    version after each batch. ``done``: the session's version, ``ends`` what this
    returned for the same plan (and ``slots``) on a fresh session: batches already
    stored are skipped. ``index``: the turn the plan's first step is."""
    out: list[int] = []
    slots = slots or {}
    for batch in _batches(plan.steps, index):
        begin = out[-1] if out else 1
        end = ends[len(out)] if len(out) < len(ends) else None
        if end is not None and end <= done:
            out.append(end)
            continue
        if isinstance(batch, cc.Boundary | Retell):
            if begin < done:
                raise InvalidEvent(f"line {batch.line}: the stored session ends inside it")
            _fill(session, slots)
            if isinstance(batch, cc.Boundary):
                _compact(session, batch)
            else:
                _retell(session, batch)
        else:
            stored = max(0, done - begin) - sum(begin < v <= done for v in slots)
            _put(session, batch[stored:], slots)
        out.append(session.version)
    _fill(session, slots)
    return out


def _put(session: Session, events: Sequence[Event], slots: Slots) -> None:
    """``session.extend(events)``, with the slots on the way put in."""
    while True:
        _fill(session, slots)
        if not events:
            return
        upcoming = [v for v in slots if v > session.version]
        room = min(upcoming, default=session.version + len(events) + 1) - session.version - 1
        session.extend(events[:room])
        events = events[room:]


def _fill(session: Session, slots: Slots) -> None:
    while session.version + 1 in slots:
        session.extend([slots[session.version + 1]])


def _batches(steps: Sequence[Step], index: int = 0) -> Iterator[list[Event] | cc.Boundary | Retell]:
    events: list[Event] = []
    for step in steps:
        if isinstance(step, cc.Boundary | Retell):
            if events:
                yield events
            yield step
            events = []
            index += isinstance(step, Retell)
            continue
        events.append(
            TurnAppended(index=index, role=step.role, content=step.content, tokens=step.tokens)
        )
        events += step.raised
        index += 1
    if events:
        yield events


def _retell(session: Session, told: Retell) -> None:
    """A block tierlog's hooks gave the agent: the re-tell the journal owes at this point
    (``Session.retell``, cut to the block's length) when every line of it is in the
    block, so ``owed()`` knows the agent was told; otherwise (the block no longer states
    all that is owed, or nothing is owed) a plain ``system`` turn holding the block."""
    limit = len(told.text)
    with contextlib.suppress(InvalidArgument):  # not even the first owed line fits
        due = session.retell(max_chars=limit, dry_run=True)
        if due is not None and set(due.content.splitlines()) <= set(told.text.splitlines()):
            session.retell(max_chars=limit, tokens=told.tokens)
            return
    turn = TurnAppended(
        index=session.state.turns, role="system", content=told.text, tokens=told.tokens
    )
    session.extend([turn])


def _compact(session: Session, boundary: cc.Boundary) -> None:
    """The boundary's compaction over everything before it, and a marker on it. It carries
    what the summary evidences and what was raised in the turns Claude Code kept verbatim
    after it (``preservedSegment``): the context it resumed from holds both."""
    state = session.state
    carried = carried_by(state, boundary.summary)
    kept = kept_by_claude_code(state, boundary.kept)
    with contextlib.suppress(UnrecoverableCompactionError):
        node = session.compact(
            tier=1,
            input=(0, state.end),
            covers=(0, state.end),
            tail_start=state.end,
            summary=boundary.summary,
            tokens=estimate(boundary.summary),
            dispositions={**carried.dispositions, **kept.dispositions},
            unresolved_ids=sorted({*carried.calls, *kept.calls}),
            constraints=sorted({*carried.constraints, *kept.constraints}),
            replaces=[n.node_id for n in state.live_nodes],
        )
        with contextlib.suppress(MarkerInvalid):
            session.emit_marker(node.node_id)
