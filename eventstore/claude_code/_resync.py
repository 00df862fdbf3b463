"""A session whose stored events are not the start of what the transcript now gives.

Two such sessions are taken up again, turn by turn, with a note, instead of refused:

- **rewound** (the file only grew since the last ingest, its bytes up to there checked,
  but its main chain now leaves the turns read before at some turn: Claude Code's
  ``/rewind``, an edited prompt): the stored turns from there on are retracted
  (``TurnRetracted``: they leave the working context, what they raised stays owed),
  then the new branch is appended; refused when a compaction was stored after the
  turn it leaves (a compaction cannot be taken back);
- **remapped** (a session an older tierlog wrote, with no ingest position, that is not
  the start of what this version makes of the transcript: an older mapping): stored
  turns from the first that differs on are retracted (not past a compaction), and the
  rest is appended as this version maps it.

Either way the notes the plan raises before that turn and the session lacks are
recorded first. A turn matches when its role and text do (a re-tell block, whose turn
the journal words, by its role).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from eventstore._session import Session
from eventstore._values import Turn
from eventstore.claude_code._plan import Draft, Plan, Retell
from eventstore.claude_code._write import write
from reducers import Event, Noted, TurnRetracted, in_spans

REWOUND = "rewound"
REMAPPED = "remapped"
_UNDOABLE = frozenset({"Compacted", "CompactionRefused"})


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
    rewound = bool(left) and rewind and _branch(left[0], wanted, fork, rows)
    if not (rewound or (remap and (not left or _undoable(rows, left[0].index)))):
        return False
    step = wanted[fork][0] if fork < len(wanted) else len(plan.steps)
    why = REWOUND if rewound else REMAPPED
    events: list[Event] = [*_unrecorded(rows, plan.steps[:step]), _note(why, left, fork)]
    events += [TurnRetracted(index=t.index, reason=f"{why}: off the main chain") for t in left]
    session.extend(events)
    write(session, Plan(steps=plan.steps[step:]), index=session.state.turns)
    return True


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


def _undoable(rows: Sequence[tuple[str, str]], index: int) -> bool:
    """Whether nothing after turn ``index`` was stored that cannot be taken back."""
    at = next(
        (
            v
            for v, (kind, payload) in enumerate(rows)
            if kind == "TurnAppended" and json.loads(payload).get("index") == index
        ),
        len(rows),
    )
    return not any(kind in _UNDOABLE for kind, _ in rows[at:])


def _note(why: str, left: Sequence[Turn], fork: int) -> Noted:
    gone = (
        f": {len(left)} stored turn(s) from turn {fork} on are retracted (what they raised"
        " stays owed)"
        if left
        else ""
    )
    if why == REWOUND:
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
