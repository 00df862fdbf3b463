"""The Session facade: every method builds a command and runs it as one commit.

``run`` is the Decider loop, inside one write transaction: bring the cached
state up to date with what other writers committed, ``decide``, append the
events at the expected version, keep a snapshot when one is due; only after
COMMIT adopt the new state and raise a refusal if there was one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from eventstore._commands import (
    AppendTurn,
    Checkpoint,
    ClearContext,
    Command,
    Compact,
    EmitMarker,
    Extend,
    Record,
    Resume,
    Retell,
    WriteSpill,
)
from eventstore._decide import decide
from eventstore._decision import Decision, maker
from eventstore._effects import Effects
from eventstore._errors import ChainBroken, IntegrityError
from eventstore._logging import bound
from eventstore._store import (
    GENESIS,
    EventWalk,
    Head,
    Recorder,
    Snapshots,
    expect_version,
    link_rows_of,
)
from eventstore._values import Context, Retelling, Turn
from invariants import Owed, owed
from reducers import (
    CallOpened,
    CallResolved,
    ConstraintLifted,
    ConstraintStated,
    Event,
    InvalidArgument,
    InvalidEvent,
    ItemDisposed,
    Marker,
    MarkerInvalidated,
    Node,
    SessionState,
    Spill,
    Truncated,
    TurnRetracted,
    fold,
    require_count,
    require_name,
    require_sequence,
    require_span,
)

R = TypeVar("R")
_append_turn = maker(AppendTurn)  # the hottest command, built without frozen setattr calls


class Session:
    """One session of a journal; get one from ``Journal.start_session`` or ``.session``."""

    def __init__(
        self,
        session_id: str,
        state: SessionState,
        *,
        recorder: Recorder,
        effects: Effects,
        snapshots: Snapshots,
        logger: logging.Logger,
        snapshot_lengths: dict[str, int] | None = None,
        anchor: Head | None = None,
    ) -> None:
        """``anchor``: the version and hash of the row ``state`` stands for, when the
        caller knows it (read again from the log when first needed otherwise)."""
        self.id = session_id
        self.effects = effects
        self._recorder = recorder
        self._snapshots = snapshots
        self._state = state
        self._anchor = anchor if anchor is not None and anchor.version == state.version else None
        self._snapshot_version = state.version
        self._snapshot_lengths = snapshot_lengths  # None: the next snapshot rewrites every chunk
        self._logger = logger

    def __repr__(self) -> str:
        return f"Session({self.id!r}, version={self._state.version})"

    # -- reading -----------------------------------------------------------------------
    @property
    def state(self) -> SessionState:
        """The state at the latest committed version (other writers included); the rows
        it reads to get there are checked to link (:class:`IntegrityError` if not)."""
        return self._catch_up(self._recorder.head(self.id))

    @property
    def version(self) -> int:
        """The latest committed version."""
        return self.state.version

    def state_at(self, version: int) -> SessionState:
        """The state after the first ``version`` events, replayed from the log."""
        version = require_count("version", version)
        head = self._recorder.head(self.id).version  # the rows after ``version`` unread
        if not 0 <= version <= head:
            raise InvalidArgument(f"version {version} is outside 0..{head}")
        return fold(self.events(stop=version))

    def events(self, *, start: int = 1, stop: int | None = None) -> Iterator[Event]:
        """The session's decoded events in version order, streamed: without ``stop``,
        up to the version committed when it is called (however the session grows while
        they are read). Each row is checked to link to the one before it: where the
        hash chain breaks, :class:`IntegrityError` (``ChainBroken``, naming the
        version) ends the stream."""
        require_count("start", start)
        if stop is None:
            stop = self._recorder.head(self.id).version
        stop = require_count("stop", stop)
        if start > stop:
            return iter(())
        return self._walk(self._row_before(start), stop)[1]

    def _row_before(self, start: int) -> Head:
        """The version and hash of the row before ``start``: where a walk links from."""
        if start <= 1:
            return Head(0, GENESIS)
        if self._anchor is not None and self._anchor.version == start - 1:
            return self._anchor
        digest = self._recorder.hash_at(self.id, start - 1)
        if digest is None:
            raise ChainBroken(self.id, start - 1, "the row is missing")
        return Head(start - 1, digest)

    def _walk(self, after: Head, stop: int) -> tuple[EventWalk, Iterator[Event]]:
        """The rows after ``after`` up to ``stop``, checked to link (``EventWalk``, whose
        ``head`` follows the walk), and their events."""
        recorder, session_id = self._recorder, self.id
        rows = link_rows_of(recorder, session_id, after.version + 1, stop)
        walk = EventWalk(
            session_id, rows, after, lambda v: recorder.read(session_id, start=v), stop
        )
        return walk, iter(walk)

    def turns(self, lo: int = 0, hi: int | None = None) -> list[Turn]:
        """Raw turns with ``lo <= index < hi``, truncated ones included."""
        require_count("lo", lo)
        state = self.state
        stop = state.turns if hi is None else min(require_count("hi", hi), state.turns)
        return [
            Turn(**t, tok_start=state.tok_starts[t["index"]])
            for t in self.effects.turns(state, [(lo, stop)])
        ]

    def read_spill(self, spill: Spill | str) -> bytes:
        """A spill's bytes (given as recorded, or by its handle), checked against their
        recorded size and sha256: :class:`IntegrityError` if they differ, InvalidEvent
        for a handle this session never recorded."""
        if not isinstance(spill, (str, Spill)):
            raise InvalidArgument(
                f"read_spill takes a Spill or its handle, not {type(spill).__name__}"
            )
        if isinstance(spill, str):
            found = next((s for s in self.state.spills if s.handle == spill), None)
            if found is None:
                raise InvalidEvent(f"session {self.id!r} recorded no spill {spill!r}")
            spill = found
        return self.effects.read_spill(spill)

    def owed(self) -> tuple[Owed, ...]:
        """The live obligations the working context (live summaries plus resident turns)
        does not evidence now, most needed first: pending constraints, rejected or
        failed approaches, open calls, superseded approaches (``invariants.owed``)."""
        return owed(self.state)

    def _catch_up(self, head: Head) -> SessionState:
        """The state at ``head``: the rows after the cached state folded on, each checked
        to link from the row the cached state stands for. A head this walk does not
        reach (a row replaced or cut behind tierlog's back) is ChainBroken: nothing is
        decided, and no writer appends, on a head that does not link."""
        state = self._state
        if head.version < state.version:
            raise IntegrityError(
                f"session {self.id!r} went back from {state.version} to {head.version}"
            )
        anchor = self._anchor or self._row_before(state.version + 1)
        if head.version > state.version:
            links, events = self._walk(anchor, head.version)
            state = fold(events, state)
            anchor = links.head
        if anchor != head:
            raise ChainBroken(
                self.id,
                head.version,
                "the last row is not the one the rows before it lead to (replaced behind"
                " tierlog's back?)",
            )
        self._state, self._anchor = state, anchor
        return state

    # -- the Decider loop ----------------------------------------------------------------
    def run(self, command: Command[R], expected_version: int | None = None) -> Decision[R]:
        """Decide ``command`` on the up-to-date state and commit its events, atomically.

        A refusal is committed like any decision; its error is in ``Decision.error``
        (the command methods raise it).
        """
        if expected_version is not None:
            require_count("expected_version", expected_version)
        lengths, recorder = self._snapshot_lengths, self._recorder
        with recorder.transaction():
            head = recorder.head(self.id)
            # the row the cached state stands for is the head: nothing to catch up
            state = self._state if head == self._anchor else self._catch_up(head)
            if expected_version is not None:
                expect_version(self.id, state.version, expected_version)
            decision = decide(command, state, self.effects)
            recorder.append(
                self.id, decision.events, expected_version=head.version, head_hash=head.hash
            )
            events, after = decision.events, decision.state
            written = recorder.head(self.id) if events else head
            snapshots = self._snapshots
            if snapshots.every and snapshots.due(after, self._snapshot_version):
                lengths = snapshots.save(self.id, after, lengths)
        if lengths is not self._snapshot_lengths:  # saved, and now committed
            self._snapshot_lengths, self._snapshot_version = lengths, after.version
        self._state, self._anchor = after, written
        # Only a refusal, a marker invalidated (of a marker the state decided on holds)
        # or DEBUG logs: the hot path neither calls nor scans the events for them.
        if decision.error is not None or state.markers or self._logger.isEnabledFor(logging.DEBUG):
            self._log_decision(decision)
        return decision

    def _do(self, command: Command[R], expected_version: int | None) -> R:
        decision = self.run(command, expected_version)
        if decision.error is not None:
            raise decision.error
        return decision.result

    def _log_decision(self, decision: Decision[Any]) -> None:
        """Refusals and invalidations at WARNING; every commit at DEBUG (only if enabled)."""
        debug = self._logger.isEnabledFor(logging.DEBUG)
        if decision.error is None and not debug:
            for event in decision.events:
                if isinstance(event, MarkerInvalidated):
                    break
            else:
                return  # the hot path: rendering a dropped log line is not free
        invalidated = [e for e in decision.events if isinstance(e, MarkerInvalidated)]
        log = bound(self._logger, session_id=self.id, version=decision.state.version)
        if decision.error is not None:
            log.warning(
                "refused",
                error=type(decision.error).__name__,
                violations=[str(v) for v in getattr(decision.error, "violations", ())],
            )
        for event in invalidated:
            log.warning("marker_invalidated", **attrs.asdict(event))
        if debug:
            log.debug("committed", types=[type(e).__name__ for e in decision.events])

    # -- commands ------------------------------------------------------------------------
    def append_turn(
        self, role: str, content: str, tokens: int, *, expected_version: int | None = None
    ) -> Turn:
        """Append one raw L0 turn."""
        command = _append_turn(role=role, content=content, tokens=tokens)
        decision = self.run(command, expected_version)
        if decision.error is not None:  # ``_do``, inline: the hottest command
            raise decision.error
        return decision.result

    def extend(
        self, events: Iterable[Event], *, expected_version: int | None = None
    ) -> SessionState:
        """Append many plain events (turns, calls, constraints, dispositions, truncations,
        checkpoints) in one transaction, each validated on the state before it.

        Decisions (compactions, markers, resumes, spills) have their own commands. A
        marker an event breaks is invalidated right after that event, in the batch.
        """
        return self._do(Extend(events=require_sequence("events", events)), expected_version)

    def open_call(
        self, call_id: str, kind: str, name: str, *, expected_version: int | None = None
    ) -> None:
        """Record an open tool call, file handle or subprocess."""
        self._do(Record(event=CallOpened(call_id=call_id, kind=kind, name=name)), expected_version)

    def resolve_call(
        self, call_id: str, outcome: str, *, expected_version: int | None = None
    ) -> None:
        """Record that an open call came back."""
        self._do(Record(event=CallResolved(call_id=call_id, outcome=outcome)), expected_version)

    def state_constraint(self, key: str, text: str, *, expected_version: int | None = None) -> None:
        """Record a user constraint, pending until lifted."""
        self._do(Record(event=ConstraintStated(key=key, text=text)), expected_version)

    def lift_constraint(self, key: str, *, expected_version: int | None = None) -> None:
        """Lift a pending constraint."""
        self._do(Record(event=ConstraintLifted(key=key)), expected_version)

    def dispose(
        self, key: str, disposition: str, reason: str, *, expected_version: int | None = None
    ) -> None:
        """Record a negative fact: ``key`` was rejected, failed or superseded."""
        event = ItemDisposed(key=key, disposition=disposition, reason=reason)
        self._do(Record(event=event), expected_version)

    def truncate(
        self, lo: int, hi: int, reason: str = "", *, expected_version: int | None = None
    ) -> None:
        """Record that budget enforcement dropped ``[lo, hi)``."""
        self._do(Record(event=Truncated(lo=lo, hi=hi, reason=reason)), expected_version)

    def retract_turn(
        self, index: int, reason: str = "", *, expected_version: int | None = None
    ) -> None:
        """Take turn ``index`` out of the working context; the log keeps it."""
        self._do(Record(event=TurnRetracted(index=index, reason=reason)), expected_version)

    def clear_context(self, reason: str = "", *, expected_version: int | None = None) -> None:
        """Take every turn and live summary out of the working context; the log keeps them."""
        self._do(ClearContext(reason=reason), expected_version)

    def checkpoint(self, *, expected_version: int | None = None) -> int:
        """Record a raw-log checkpoint at the log's end; returns its position."""
        return self._do(Checkpoint(), expected_version)

    def spill(self, lo: int, hi: int, *, expected_version: int | None = None) -> Spill:
        """Write the raw range ``[lo, hi)`` to the spill store and record it (an empty
        range is InvalidEvent: there is nothing to copy)."""
        if type(lo) is int and type(hi) is int and lo == hi:
            raise InvalidEvent(f"spill [{lo}, {hi}) is empty: there is nothing to copy")
        return self._do(WriteSpill(lo=lo, hi=hi), expected_version)

    def compact(
        self,
        *,
        tier: int,
        input: tuple[int, int],  # noqa: A002 - the SPEC's name
        covers: tuple[int, int],
        tail_start: int,
        summary: str,
        tokens: int,
        dispositions: Mapping[str, str] | None = None,
        resolved_ids: Sequence[str] = (),
        unresolved_ids: Sequence[str] = (),
        constraints: Sequence[str] = (),
        replaces: Sequence[str] = (),
        expected_version: int | None = None,
        require_marker: bool = False,
    ) -> Node:
        """Propose a summary node; commit it, or refuse it with UnrecoverableCompactionError.

        With ``require_marker`` the proposal is also refused when a marker on its node
        would break M1 or M2 (a runtime that replaces its history with the summary).
        """
        input_lo, input_hi = require_span("input", input)
        covers_lo, covers_hi = require_span("covers", covers)
        constraints = require_sequence("constraints", constraints)
        _known_constraints(self.state, constraints)
        command = Compact(
            tier=tier,
            input_lo=input_lo,
            input_hi=input_hi,
            covers_lo=covers_lo,
            covers_hi=covers_hi,
            tail_start=tail_start,
            summary=summary,
            tokens=tokens,
            dispositions=dispositions or {},
            resolved_ids=require_sequence("resolved_ids", resolved_ids),
            unresolved_ids=require_sequence("unresolved_ids", unresolved_ids),
            constraints=constraints,
            replaces=require_sequence("replaces", replaces),
            require_marker=require_marker,
        )
        node = self._do(command, expected_version)
        assert node is not None  # a refusal was raised by _do
        return node

    def emit_marker(self, node_id: str, *, expected_version: int | None = None) -> Marker:
        """Emit a recovery marker on a node, or refuse it with MarkerInvalid."""
        marker = self._do(EmitMarker(node_id=require_name("node_id", node_id)), expected_version)
        assert marker is not None  # a refusal was raised by _do
        return marker

    def retell(
        self,
        max_chars: int | None = None,
        *,
        tokens: int | None = None,
        dry_run: bool = False,
        expected_version: int | None = None,
    ) -> Retelling | None:
        """Append one ``system`` turn stating what the working context owes, one line each
        (at most ``max_chars`` characters: what does not fit stays owed, and the result's
        ``still_owed`` says so), recorded with a ``Retold`` event naming what it states.

        ``tokens`` is the turn's size (one per 4 UTF-8 bytes when ``None``). Nothing is
        appended, and ``None`` returned, when nothing is owed; InvalidArgument when
        ``max_chars`` is not a count or cannot hold the first owed line. ``dry_run`` decides on the
        current state and writes nothing (the turn that would be appended).
        """
        command = Retell(
            max_chars=None if max_chars is None else _limit(max_chars),
            tokens=None if tokens is None else require_count("tokens", tokens),
        )
        if dry_run:
            return decide(command, self.state, self.effects).result
        return self._do(command, expected_version)

    def resume(self, marker_id: str, *, expected_version: int | None = None) -> Context:
        """The digest context if the marker holds, else the raw checkpoint: never a patch."""
        return self._do(Resume(marker_id=require_name("marker_id", marker_id)), expected_version)


def _limit(max_chars: object) -> int:
    """``max_chars`` if it is a count, else InvalidArgument (an option, not an event)."""
    try:
        return require_count("max_chars", max_chars)
    except InvalidEvent as exc:
        raise InvalidArgument(str(exc)) from None


def _known_constraints(state: SessionState, keys: Sequence[str]) -> None:
    """InvalidEvent for a constraint key the session never stated: one pending now, or
    one a summary node already carries, is known."""
    known = set(state.constraints)
    known.update(key for node in state.nodes.values() for key in node.constraints)
    unknown = [key for key in keys if isinstance(key, str) and key not in known]
    if unknown:
        raise InvalidEvent(
            f"unknown constraint(s) {', '.join(map(repr, unknown))}: a summary carries the"
            " keys of constraints the session stated"
        )
