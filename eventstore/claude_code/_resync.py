"""A session whose stored events are not the start of what the transcript now gives.

Three such sessions are taken up again, turn by turn, with a note, instead of refused:

- **rewound** (the file only grew since the last ingest, its bytes up to there checked,
  but its main chain now leaves the turns read before at some turn: Claude Code's
  ``/rewind``, an edited prompt): the stored turns from there on are retracted
  (``TurnRetracted``: they leave the working context, what they raised stays owed),
  then the new branch is appended; refused when a compaction was stored after the
  turn it leaves (a compaction cannot be taken back);
- **remapped** (a session an older tierlog wrote, with no ingest position, that is not
  the start of what this version makes of the transcript: an older mapping): stored
  turns from the first that differs on are retracted (not past a compaction), and the
  rest is appended as this version maps it;
- **completed** (the file only grew, and the first stored turn that differs is a
  response the file now gives more blocks of, followed only by tool results the file
  gives too: it was read while Claude Code wrote it, an entry a content block): those
  turns are retracted and the rest appended, without raising twice what they raised.

A session taken up so before is no longer the start of a fresh ingest event for event;
read whole again (the file only grew), its resident turns are, and the rest is appended.

Either way the notes the plan raises before that turn and the session lacks are
recorded first. A turn matches when its role and text do (a re-tell block, whose turn
the journal words, by its role).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

import attrs

from eventstore._session import Session
from eventstore._values import Turn
from eventstore.claude_code._plan import Draft, Plan, Retell, Step
from eventstore.claude_code._write import write
from reducers import CallOpened, CallResolved, Event, Noted, TurnAppended, TurnRetracted, in_spans

REWOUND = "rewound"
REMAPPED = "remapped"
COMPLETED = "completed"
_UNDOABLE = frozenset({"Compacted", "CompactionRefused"})
_ONCE = (CallOpened, CallResolved, Noted)  # what a completed response does not raise again


def resync(
    session: Session, plan: Plan, rows: Sequence[tuple[str, str]], *, rewind: bool, remap: bool
) -> bool:
    """Take the session up again (see the module doc); whether it was."""
    state = session.state
    resident = [t for t in session.turns() if not in_spans(state.withdrawn, t.index)]
    wanted = [(at, s) for at, s in enumerate(plan.steps) if isinstance(s, Draft | Retell)]
    fork = next(
        (i for i, (t, (_, s)) in enumerate(zip(resident, wanted, strict=False)) if not _same(t, s)),
        min(len(resident), len(wanted)),
    )
    left = resident[fork:]
    if not left and rewind and state.withdrawn:  # taken up before: read on
        _read_on(session, plan, rows, wanted[fork - 1][0] + 1 if fork else 0)
        return True
    rewound = bool(left) and rewind and _branch(left[0], wanted, fork, rows)
    completed = bool(left) and rewind and not rewound and _completed(left, wanted, fork, rows)
    if completed and not _read_before(wanted[fork][1], rows):  # another response: a rewind
        rewound, completed = True, False
    if not (rewound or completed or (remap and (not left or _undoable(rows, left[0].index)))):
        return False
    step = wanted[fork][0] if fork < len(wanted) else len(plan.steps)
    why = REWOUND if rewound else COMPLETED if completed else REMAPPED
    events: list[Event] = [*_unrecorded(rows, plan.steps[:step]), _note(why, left, fork)]
    reason = "read while Claude Code wrote it" if completed else "off the main chain"
    events += [TurnRetracted(index=t.index, reason=f"{why}: {reason}") for t in left]
    session.extend(events)
    steps = plan.steps[step:]
    if completed:  # what the turns read before raised (a call opened) is raised once
        steps = _unraised(steps, session, rows, left[0].index)
    write(session, Plan(steps=steps), index=session.state.turns)
    return True


def _read_on(session: Session, plan: Plan, rows: Sequence[tuple[str, str]], step: int) -> None:
    """A session taken up before (its events are not the start of a fresh ingest's, its
    resident turns are) and read whole again, as when a completed response's results hang
    off their own calls: the notes before ``step`` it lacks, then the steps from it."""
    session.extend(_unrecorded(rows, plan.steps[:step]))
    write(session, Plan(steps=plan.steps[step:]), index=session.state.turns)


def _same(turn: Turn, step: Draft | Retell) -> bool:
    if isinstance(step, Retell):
        return turn.role == "system"
    return (turn.role, turn.content) == (step.role, step.content)


def _branch(
    first: Turn,
    wanted: Sequence[tuple[int, Draft | Retell]],
    fork: int,
    rows: Sequence[tuple[str, str]],
) -> bool:
    """Whether the chain leaves the stored turns where the user said something else (a
    rewind or an edited prompt goes back to a prompt; a turn that differs otherwise, as
    a response read while it was written, is not taken back), with nothing stored after
    that turn that cannot be taken back."""
    new = wanted[fork][1] if fork < len(wanted) else None
    said = isinstance(new, Draft) and new.role == "user" and first.role == "user"
    return said and _undoable(rows, first.index)


def _completed(
    left: Sequence[Turn],
    wanted: Sequence[tuple[int, Draft | Retell]],
    fork: int,
    rows: Sequence[tuple[str, str]],
) -> bool:
    """Whether the turns that differ start with a response the file now gives more of,
    followed only by tool results it gives too: Claude Code writes a response as an
    entry a content block over a few seconds, a tool's result as soon as it comes
    (between the blocks), and an ingest in between read only the first blocks."""
    new = wanted[fork][1] if fork < len(wanted) else None
    first, later = left[0], [step for _, step in wanted[fork + 1 :]]
    return (
        isinstance(new, Draft)
        and new.role == first.role == "assistant"
        and len(new.content) > len(first.content)
        and new.content.startswith(first.content)
        and all(_result_in(turn, later) for turn in left[1:])
        and _undoable(rows, first.index)
    )


def _read_before(step: Draft | Retell, rows: Sequence[tuple[str, str]]) -> bool:
    """Whether ``step``'s first entry is one the last ingest read (the stored part of a
    response is its first entries; a response that merely begins with the same text, after
    a rewind to the same prompt, starts on a line written since)."""
    read = next((json.loads(p)["lines"] for k, p in reversed(rows) if k == "Ingested"), 0)
    return isinstance(step, Draft) and step.line is not None and step.line <= read


def _result_in(turn: Turn, steps: Sequence[Draft | Retell]) -> bool:
    """Whether ``turn`` is a tool's result that ``steps`` hold too."""
    return (
        turn.role == "user"
        and turn.content.startswith("[tool_result ")
        and any(
            isinstance(s, Draft) and (s.role, s.content) == (turn.role, turn.content) for s in steps
        )
    )


def _unraised(
    steps: Sequence[Step], session: Session, rows: Sequence[tuple[str, str]], index: int
) -> list[Step]:
    """``steps`` without the events the stored turns from ``index`` on raised (the events
    after the ``TurnAppended`` of the response's first part that are no turn), each taken
    once: a call the part of the response opened is open already, one whose result was
    read is resolved, a note is there. A failed attempt or a rule the part raised is
    raised again, so that the resident turn that holds it now is where it is (at the
    retracted part it would be owed, as a fresh ingest's is not)."""
    after = session.events(start=_first_part(rows, index) + 2, stop=len(rows))
    stored = [e for e in after if not isinstance(e, TurnAppended | TurnRetracted)]
    out: list[Step] = []
    for step in steps:
        if isinstance(step, Draft):
            kept: list[Event] = []
            for event in step.raised:
                if event in stored and isinstance(event, _ONCE):
                    stored.remove(event)
                else:  # a fact or rule again, at the turn that holds it now
                    kept.append(event)
            step = attrs.evolve(step, raised=kept)
        out.append(step)
    return out


def _first_part(rows: Sequence[tuple[str, str]], index: int) -> int:
    """The position in ``rows`` of the ``TurnAppended`` of the response's first stored part:
    a response completed before was appended again right after the parts it retracted (it
    and its results raised only what they had not, so what was raised is counted from
    there)."""
    at = _turn_row(rows, index)
    while at < len(rows):
        back, parts = at, []
        while back > 0 and rows[back - 1][0] == "TurnRetracted":
            back -= 1
            retracted = json.loads(rows[back][1])
            if retracted.get("reason", "").startswith(f"{COMPLETED}:"):
                parts.append(retracted["index"])
        if not parts:
            return at
        at = _turn_row(rows, min(parts))
    return at


def _turn_row(rows: Sequence[tuple[str, str]], index: int) -> int:
    """The position in ``rows`` of turn ``index``'s ``TurnAppended`` (``len(rows)`` if none)."""
    return next(
        (
            v
            for v, (kind, payload) in enumerate(rows)
            if kind == "TurnAppended" and json.loads(payload).get("index") == index
        ),
        len(rows),
    )


def _undoable(rows: Sequence[tuple[str, str]], index: int) -> bool:
    """Whether nothing after turn ``index`` was stored that cannot be taken back."""
    at = _turn_row(rows, index)
    return not any(kind in _UNDOABLE for kind, _ in rows[at:])


def _note(why: str, left: Sequence[Turn], fork: int) -> Noted:
    gone = (
        f": {len(left)} stored turn(s) from turn {fork} on are retracted (what they raised"
        " stays owed)"
        if left
        else ""
    )
    if why == COMPLETED:
        text = (
            f"turn {fork} was read while Claude Code wrote its response (an entry a"
            f" content block): {len(left)} stored turn(s) from turn {fork} on are"
            " retracted and the whole response follows"
        )
    elif why == REWOUND:
        text = (
            f"the transcript's main chain leaves the turns read before at turn {fork} (a"
            f" rewind, an edited prompt){gone}, and the new branch follows"
        )
    else:
        text = (
            f"the session was written by an older tierlog: its first {fork} turns are the"
            f" transcript's{gone}; the rest is appended as this version maps it"
        )
    return Noted(kind=why, text=text, count=max(1, len(left)))


def _unrecorded(rows: Sequence[tuple[str, str]], steps: Sequence[object]) -> list[Noted]:
    """The notes ``steps`` raise that the stored rows do not hold."""
    held = Counter(payload for kind, payload in rows if kind == "Noted")
    out: list[Noted] = []
    for step in steps:
        for e in step.raised if isinstance(step, Draft) else ():
            if not isinstance(e, Noted):
                continue
            key = json.dumps(
                {"count": e.count, "kind": e.kind, "line": e.line, "text": e.text},
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
            )
            if held[key] > 0:
                held[key] -= 1
            else:
                out.append(e)
    return out
