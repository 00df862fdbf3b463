"""Re-deciding an imported session, command by command, into a (scratch) session.

Each command of the file is first checked against the history the file itself
records. A command that cannot follow that history is *invalid on its own* and
aborts the import. A command that is valid there but cannot follow the history
as re-decided now (its node was refused this time, its marker skipped) is
*made impossible by the re-decision*: it is skipped and reported. Node and
marker ids are derived from versions, so when a re-decision changes how many
events a command writes, later ids shift: references are translated from the
file's ids to the ones the re-decided session gave.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import attrs

from eventstore import _decide, _markers
from eventstore._commands import Extend
from eventstore._ops._replay import command_of, commands
from eventstore._session import Session
from invariants import validate
from reducers import (
    PLAIN_EVENTS,
    Compacted,
    CompactionRefused,
    Event,
    InvalidEvent,
    MarkerEmitted,
    MarkerInvalidated,
    MarkerRefused,
    Resumed,
    SessionStarted,
    SessionState,
    Spilled,
    apply,
)

BATCH = 1000  # lone plain events committed together in the scratch session
Ids = dict[str, str | None]  # the file's node/marker id -> the re-decided one (None: gone)


@attrs.frozen(kw_only=True)
class Outcome:
    """How one session's commands were re-decided."""

    redecided: int
    skipped: tuple[str, ...]
    findings: tuple[str, ...] = ()  # each command decided differently, or skipped


class Redecider:
    """Feeds a file's commands, in order, through ``session``'s commit pipeline."""

    def __init__(self, session: Session, source: str, recorded: SessionState) -> None:
        self.session = session
        self.source = source
        self.recorded = recorded  # the state the file itself records
        self.ids: Ids = {}
        self.redecided = 0
        self.skipped: list[str] = []
        self.findings: list[str] = []
        self.version = recorded.version + 1  # the file's version of the next command
        self._plain: list[Event] = []

    def run(self, events: Iterable[Event], progress: Callable[[int], None] | None) -> Outcome:
        """Re-decide every command of ``events`` (which follow ``recorded``)."""
        for count, group in enumerate(commands(events), 1):
            self.feed(group)
            if progress:
                progress(count)
        self._flush()
        return Outcome(
            redecided=self.redecided, skipped=tuple(self.skipped), findings=tuple(self.findings)
        )

    def feed(self, group: list[Event]) -> None:
        """Check ``group`` on the recorded history, then decide it on the new one."""
        self._check_recorded(group)
        if len(group) == 1 and type(group[0]) in PLAIN_EVENTS:
            self._plain.append(group[0])
            self.version += 1
            if len(self._plain) >= BATCH:
                self._flush()
            return
        self._flush()
        self._decide(group)
        self.version += len(group)

    # -- the file's own history ------------------------------------------------------
    def _check_recorded(self, group: list[Event]) -> None:
        """InvalidEvent (aborting the import) if ``group`` cannot follow the file's history."""
        state = self.recorded
        try:
            if isinstance(group[0], (MarkerInvalidated, SessionStarted)):
                command_of(group)  # raises: no command writes these first
            for event in group:
                validate(state, event)
                state = apply(state, event)
        except InvalidEvent as exc:
            raise InvalidEvent(f"{self.source} v{self.version}: {exc}") from None
        self.recorded = state

    # -- the re-decided history ------------------------------------------------------
    def _flush(self) -> None:
        """Commit the buffered plain events together, or one by one if one fails.

        A plain event may now break a marker the file's history did not have valid
        at that point: each one that does counts as decided differently.
        """
        batch, self._plain = self._plain, []
        if not batch:
            return
        first = self.version - len(batch)
        try:
            events = self.session.run(Extend(events=tuple(batch))).events
        except InvalidEvent:
            for offset, event in enumerate(batch):
                self._decide([event], version=first + offset)
            return
        broken = [
            b.marker_id
            for a, b in itertools.pairwise(events)
            if isinstance(b, MarkerInvalidated) and not isinstance(a, MarkerInvalidated)
        ]
        self.redecided += len(broken)
        if broken:
            self.findings.append(
                f"replay v{first}..v{self.version - 1}: the re-decision invalidates marker(s)"
                f" {', '.join(broken)}, which the file's history kept valid"
            )

    def _decide(self, group: list[Event], *, version: int | None = None) -> None:
        version = self.version if version is None else version
        gone = [ref for ref in _references(group) if ref in self.ids and not self.ids[ref]]
        if gone:
            needs = ", ".join(map(repr, gone))
            self._skip(version, group, f"needs {needs}, which the re-decision removed")
            return
        translated = _translate(group, self.ids)
        state = self.session.state
        try:
            command, _ = command_of(translated)
            decided = self.session.run(command).events
        except InvalidEvent as exc:
            self._skip(version, group, str(exc))
            return
        expected = _translate(translated, _own_ids(group, state))
        if not _same(decided, expected):
            self.redecided += 1
            self.findings.append(f"replay v{version}: {_difference(expected, decided)}")
        self.ids.update(_created(group, decided))

    def _skip(self, version: int, group: list[Event], why: str) -> None:
        self.skipped.append(f"v{version} {type(group[0]).__name__}: {why}")
        self.findings.append(f"replay v{version}: {type(group[0]).__name__} skipped: {why}")
        self.ids.update(dict.fromkeys(_created(group, ()), None))


def _proposal(event: Event) -> Compacted | None:
    if isinstance(event, CompactionRefused):
        return event.proposal
    return event if isinstance(event, Compacted) else None


def _references(group: list[Event]) -> list[str]:
    """The node and marker ids ``group``'s command needs to exist."""
    head = group[-1] if isinstance(group[-1], (CompactionRefused, MarkerRefused)) else group[0]
    proposal = _proposal(head)
    if proposal is not None:
        return list(proposal.replaces)
    if isinstance(head, (MarkerEmitted, MarkerRefused)):
        return [head.node_id]
    if isinstance(head, Resumed):
        return [head.marker_id]
    return []


def _created(command: list[Event], decided: tuple[Event, ...]) -> Ids:
    """The file's id each new node or marker of ``command`` had -> its id in ``decided``."""
    new = decided[0] if decided else None
    marker = next((e for e in decided if isinstance(e, (MarkerEmitted, MarkerRefused))), None)
    for event in command:
        proposal = _proposal(event)
        if proposal is not None:
            return {proposal.node_id: new.node_id if isinstance(new, Compacted) else None}
        if isinstance(event, (MarkerEmitted, MarkerRefused)):
            return {event.marker_id: marker.marker_id if marker is not None else None}
    return {}


def _own_ids(command: list[Event], state: SessionState) -> Ids:
    """The file's ids of the node or marker ``command`` creates -> the ids it gets on ``state``."""
    ids: Ids = {}
    for event in command:
        proposal = _proposal(event)
        if proposal is not None:
            ids[proposal.node_id] = _decide.node_id_for(state)
        elif isinstance(event, (MarkerEmitted, MarkerRefused)):
            ids[event.marker_id] = _markers.marker_id_for(state)
    return ids


def _translate(command: list[Event], ids: Ids) -> list[Event]:
    """``command`` with every node and marker id renamed through ``ids``."""

    def t(name: str) -> str:
        return ids.get(name) or name

    def node(p: Compacted) -> Compacted:
        return attrs.evolve(p, node_id=t(p.node_id), replaces=tuple(map(t, p.replaces)))

    out: list[Event] = []
    for e in command:
        if isinstance(e, Compacted):
            e = node(e)
        elif isinstance(e, CompactionRefused):
            e = attrs.evolve(e, proposal=node(e.proposal))
        elif isinstance(e, (MarkerEmitted, MarkerRefused)):
            e = attrs.evolve(e, marker_id=t(e.marker_id), node_id=t(e.node_id))
        elif isinstance(e, (MarkerInvalidated, Resumed)):
            e = attrs.evolve(e, marker_id=t(e.marker_id))
        out.append(e)
    return out


def _difference(recorded: list[Event], decided: tuple[Event, ...]) -> str:
    """How a re-decided command differs from the file's, in a line."""
    for a, b in zip(recorded, decided, strict=False):
        if (
            isinstance(a, Spilled)
            and isinstance(b, Spilled)
            and (a.sha256, a.bytes)
            != (
                b.sha256,
                b.bytes,
            )
        ):
            return (
                f"the file's Spilled [{a.lo}, {a.hi}) records sha256 {a.sha256[:16]}..."
                f" ({a.bytes} bytes); the turns it copies give {b.sha256[:16]}..."
                f" ({b.bytes} bytes)"
            )
    said = ", ".join(type(e).__name__ for e in recorded)
    now = ", ".join(type(e).__name__ for e in decided)
    if said != now:
        return f"the file records [{said}] but the checks now decide [{now}]"
    changed = next(type(a).__name__ for a, b in zip(recorded, decided, strict=True) if a != b)
    return f"the file's {changed} is not what the checks decide now"


def _same(decided: tuple[Event, ...], recorded: list[Event]) -> bool:
    """Whether the decision is the recorded one (a spill may sit under another file name)."""
    if len(decided) != len(recorded):
        return False
    for a, b in zip(decided, recorded, strict=True):
        if isinstance(a, Spilled) and isinstance(b, Spilled):
            b = attrs.evolve(b, handle=a.handle)
        if a != b:
            return False
    return True
