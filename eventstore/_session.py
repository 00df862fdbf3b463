"""The Session facade: every call is one checked, atomic commit.

Each write runs the Decider loop inside one ``BEGIN IMMEDIATE`` transaction:
bring the cached state up to date with what other writers committed, decide
(validate, run the invariants), append the events at the expected version, and
only after COMMIT adopt the new state and raise a refusal if there was one.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from eventstore import _decide
from eventstore._codec import from_payload
from eventstore._errors import ConcurrencyError, IntegrityError
from eventstore._files import render_digest, render_turns
from eventstore._store import EventStore
from eventstore._values import Context, Turn
from invariants import check_range, floor, validate
from reducers import (
    PLAIN_EVENTS,
    CallOpened,
    CallResolved,
    Checkpointed,
    Compacted,
    ConstraintLifted,
    ConstraintStated,
    Event,
    InvalidEvent,
    ItemDisposed,
    Ledger,
    Marker,
    MarkerInvalidated,
    Node,
    SessionState,
    Spill,
    Spilled,
    Truncated,
    TurnAppended,
    fold,
    require_count,
    require_name,
    require_sequence,
    require_span,
)

if TYPE_CHECKING:
    from eventstore._journal import Journal


class Session:
    """One session of a journal; get one from ``Journal.start_session`` or ``.session``."""

    def __init__(
        self,
        journal: Journal,
        session_id: str,
        state: SessionState,
        *,
        snapshot_lengths: dict[str, int] | None = None,
    ) -> None:
        self.journal = journal
        self.id = session_id
        self._state = state
        self._snapshot_version = state.version
        self._snapshot_lengths = snapshot_lengths  # None: the next snapshot rewrites every chunk
        self._log = structlog.wrap_logger(
            journal.logger, wrapper_class=structlog.stdlib.BoundLogger
        ).bind(session_id=session_id)

    def __repr__(self) -> str:
        return f"Session({self.id!r}, version={self._state.version})"

    # -- reading -----------------------------------------------------------------------
    @property
    def _store(self) -> EventStore:
        return self.journal.store

    @property
    def state(self) -> SessionState:
        """The state at the latest committed version (other writers included)."""
        return self._catch_up()

    @property
    def version(self) -> int:
        """The latest committed version."""
        return self.state.version

    def state_at(self, version: int) -> SessionState:
        """The state after the first ``version`` events, replayed from the log."""
        version = require_count("version", version)
        head = self.state.version
        if not 0 <= version <= head:
            raise InvalidEvent(f"version {version} is outside 0..{head}")
        return fold(self.events(stop=version))

    def events(self, *, start: int = 1, stop: int | None = None) -> Iterator[Event]:
        """The session's decoded events in version order, streamed."""
        require_count("start", start)
        if stop is not None:
            require_count("stop", stop)
        return self._events(start, stop)

    def _events(self, start: int, stop: int | None) -> Iterator[Event]:
        rows = self._store.read_payloads(self.id, start=start, stop=stop)
        try:
            for type_name, payload in rows:
                yield from_payload(type_name, payload)
        except InvalidEvent as exc:
            raise IntegrityError(f"session {self.id!r}: malformed stored event: {exc}") from None

    def turns(self, lo: int = 0, hi: int | None = None) -> list[Turn]:
        """Raw turns with ``lo <= index < hi``, truncated ones included."""
        require_count("lo", lo)
        state = self.state
        stop = state.turns if hi is None else min(require_count("hi", hi), state.turns)
        return [
            Turn(**t, tok_start=state.tok_starts[t["index"]]) for t in self._turns(state, lo, stop)
        ]

    def _catch_up(self) -> SessionState:
        return self._catch_up_to(self._store.head(self.id)[0])

    def _catch_up_to(self, head: int) -> SessionState:
        state = self._state
        if head < state.version:
            raise IntegrityError(f"session {self.id!r} went back from {state.version} to {head}")
        if head > state.version:
            self._state = fold(self.events(start=state.version + 1), state)
        return self._state

    # -- the commit pipeline -------------------------------------------------------------
    def _commit(
        self,
        decide: Callable[[SessionState], _decide.Decision],
        expected_version: int | None = None,
    ) -> SessionState:
        """Run ``decide`` on the up-to-date state and commit its events, in one transaction.

        Private on purpose: ``decide`` is trusted to have run the checks, so only the
        commands here (and ``import``, which re-decides with the same code) call it.
        The decision's error, if any, is raised after the commit.
        """
        if expected_version is not None:
            require_count("expected_version", expected_version)
        lengths = self._snapshot_lengths
        with self._store.transaction():
            head, head_hash = self._store.head(self.id)
            state = self._catch_up_to(head)
            if expected_version is not None and expected_version != state.version:
                raise ConcurrencyError(
                    f"session {self.id!r} is at version {state.version}, "
                    f"expected {expected_version}"
                )
            decision = decide(state)
            new = decision.state or fold(decision.events, state)
            self._store.append(self.id, decision.events, expected_version=head, head_hash=head_hash)
            if self.journal.snapshots.due(new.version, self._snapshot_version):
                lengths = self.journal.snapshots.save(self.id, new, lengths)
        if lengths is not self._snapshot_lengths:  # saved, and now committed
            self._snapshot_lengths, self._snapshot_version = lengths, new.version
        self._state = new
        self._log_decision(new, decision)
        if decision.error is not None:
            raise decision.error
        return new

    def _append(self, event: Event, expected_version: int | None) -> SessionState:
        def decide(state: SessionState) -> _decide.Decision:
            validate(state, event)
            return _decide.Decision(events=(event,))

        return self._commit(decide, expected_version)

    def _log_decision(self, state: SessionState, decision: _decide.Decision) -> None:
        """Refusals and invalidations at WARNING; every commit at DEBUG (only if enabled)."""
        invalidated = [e for e in decision.events if isinstance(e, MarkerInvalidated)]
        debug = self.journal.logger.isEnabledFor(logging.DEBUG)
        if decision.error is None and not invalidated and not debug:
            return  # the hot path: rendering a dropped log line is not free
        log = self._log.bind(version=state.version)
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

        def decide(state: SessionState) -> _decide.Decision:
            turn = TurnAppended(index=state.turns, role=role, content=content, tokens=tokens)
            validate(state, turn)  # the session's token total stays a 63-bit count
            return _decide.Decision(events=(turn,))

        state = self._commit(decide, expected_version)
        index = state.turns - 1
        start = state.tok_starts[index]
        return Turn(index=index, role=role, content=content, tokens=tokens, tok_start=start)

    def extend(
        self, events: Iterable[Event], *, expected_version: int | None = None
    ) -> SessionState:
        """Append many plain events (turns, calls, constraints, dispositions, truncations,
        checkpoints) in one transaction, each validated on the state before it.

        Decisions (compactions, markers, resumes, spills) have their own commands.
        """
        batch = require_sequence("events", events)
        for event in batch:
            if type(event) not in PLAIN_EVENTS:
                raise InvalidEvent(
                    f"{type(event).__name__} is not a plain event: use its own command"
                )

        def decide(state: SessionState) -> _decide.Decision:
            return _decide.Decision(events=batch, state=fold(batch, state, check=validate))

        return self._commit(decide, expected_version)

    def open_call(
        self, call_id: str, kind: str, name: str, *, expected_version: int | None = None
    ) -> None:
        """Record an open tool call, file handle or subprocess."""
        self._append(CallOpened(call_id=call_id, kind=kind, name=name), expected_version)

    def resolve_call(
        self, call_id: str, outcome: str, *, expected_version: int | None = None
    ) -> None:
        """Record that an open call came back."""
        self._append(CallResolved(call_id=call_id, outcome=outcome), expected_version)

    def state_constraint(self, key: str, text: str, *, expected_version: int | None = None) -> None:
        """Record a user constraint, pending until lifted."""
        self._append(ConstraintStated(key=key, text=text), expected_version)

    def lift_constraint(self, key: str, *, expected_version: int | None = None) -> None:
        """Lift a pending constraint."""
        self._append(ConstraintLifted(key=key), expected_version)

    def dispose(
        self, key: str, disposition: str, reason: str, *, expected_version: int | None = None
    ) -> None:
        """Record a negative fact: ``key`` was rejected, failed or superseded."""
        event = ItemDisposed(key=key, disposition=disposition, reason=reason)
        self._append(event, expected_version)

    def truncate(
        self, lo: int, hi: int, reason: str = "", *, expected_version: int | None = None
    ) -> None:
        """Record that budget enforcement dropped ``[lo, hi)``."""
        self._append(Truncated(lo=lo, hi=hi, reason=reason), expected_version)

    def checkpoint(self, *, expected_version: int | None = None) -> int:
        """Record a raw-log checkpoint at the log's end; returns its position."""
        state = self._commit(
            lambda s: _decide.Decision(events=(Checkpointed(at=s.end),)), expected_version
        )
        return state.checkpoints[-1]

    def spill(self, lo: int, hi: int, *, expected_version: int | None = None) -> Spill:
        """Write the raw range ``[lo, hi)`` to a spill file and record it."""

        def decide(state: SessionState) -> _decide.Decision:
            check_range(state, "spill", lo, hi)
            return _decide.Decision(events=(self.make_spill(state, lo, hi),))

        return self._commit(decide, expected_version).spills[-1]

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
    ) -> Node:
        """Propose a summary node; commit it, or refuse it with UnrecoverableCompactionError."""
        input_lo, input_hi = require_span("input", input)
        covers_lo, covers_hi = require_span("covers", covers)
        fields: dict[str, Any] = {
            "tier": tier,
            "input_lo": input_lo,
            "input_hi": input_hi,
            "covers_lo": covers_lo,
            "covers_hi": covers_hi,
            "tail_start": tail_start,
            "summary": summary,
            "tokens": tokens,
            "dispositions": dispositions or {},
            "resolved_ids": resolved_ids,
            "unresolved_ids": unresolved_ids,
            "constraints": constraints,
            "replaces": replaces,
        }
        node_ids: list[str] = []

        def decide(state: SessionState) -> _decide.Decision:
            proposal = Compacted(node_id=_decide.node_id_for(state), **fields)
            node_ids.append(proposal.node_id)
            return self.decide_compaction(state, proposal)

        return self._commit(decide, expected_version).nodes[node_ids[-1]]

    def decide_compaction(self, state: SessionState, proposal: Compacted) -> _decide.Decision:
        """The compaction decision on ``state``, with this session's spill files."""
        return _decide.compaction(
            state,
            proposal,
            checked_against=self.verified(state, proposal),
            make_spill=self.make_spill,
        )

    def emit_marker(self, node_id: str, *, expected_version: int | None = None) -> Marker:
        """Emit a recovery marker on a node, or refuse it with MarkerInvalid."""
        require_name("node_id", node_id)
        ids: list[str] = []

        def decide(state: SessionState) -> _decide.Decision:
            ids.append(_decide.marker_id_for(state))
            return _decide.marker(state, ids[-1], node_id)

        return self._commit(decide, expected_version).markers[ids[-1]]

    def resume(self, marker_id: str, *, expected_version: int | None = None) -> Context:
        """The digest context if the marker holds, else the raw checkpoint: never a patch."""
        contexts: list[Context] = []

        def decide(state: SessionState) -> _decide.Decision:
            contexts.append(self.context_for(state, marker_id))
            return _decide.Decision(events=(contexts[-1].event(),))

        state = self._commit(decide, expected_version)
        return attrs.evolve(contexts[-1], version=state.version)

    # -- effects the decisions need ------------------------------------------------------
    def context_for(self, state: SessionState, marker_id: str) -> Context:
        """The context a resume of ``marker_id`` on ``state`` returns (no write)."""
        if require_name("marker_id", marker_id) not in state.markers:
            raise InvalidEvent(f"unknown marker {marker_id!r}")
        trusted, reason = _decide.resume_verdict(state, marker_id)
        if trusted:
            source, at = "digest", None
            data = render_digest(state.live_nodes, self._resident_turns(state))
        else:
            source, at = "raw_checkpoint", _decide.raw_checkpoint(state, marker_id)
            data = render_turns(self._turns(state, 0, state.turn_index(at)))
        return Context(
            marker_id=marker_id,
            source=source,
            content=data.decode(),
            sha256=hashlib.sha256(data).hexdigest(),
            checkpoint_at=at,
            reason=reason,
            version=state.version,
        )

    def _turns(self, state: SessionState, lo: int, hi: int) -> Iterator[dict[str, Any]]:
        """Raw turns ``lo <= index < hi`` of ``state``, read by their versions."""
        if lo >= hi:
            return iter(())
        versions = state.turn_versions
        return self._store.turns(self.id, versions[lo], versions[hi - 1])

    def _resident_turns(self, state: SessionState) -> Iterator[dict[str, Any]]:
        lo = 0
        for gone_lo, gone_hi in (*state.evicted, (state.end, state.end)):
            if lo < gone_lo:
                yield from self._turns(state, state.turn_index(lo), state.turn_index(gone_lo))
            lo = max(lo, gone_hi)

    def make_spill(self, state: SessionState, lo: int, hi: int) -> Spilled:
        """Write the raw range ``[lo, hi)`` of ``state``'s turns to the spill store (no
        commit; the file goes again if the transaction does not commit)."""
        data = render_turns(self._turns(state, state.turn_index(lo), state.turn_index(hi)))
        return self.journal.spills.write(data, lo=lo, hi=hi, earlier=state.spills)

    def spill_problem(self, spill: Spill | Spilled) -> str | None:
        """Why a spill no longer reads back as its recorded bytes, or ``None``."""
        return self.journal.spills.problem(spill)

    def read_spill(self, spill: Spill | Spilled) -> bytes:
        """A spill's bytes, checked against its recorded size and sha256 (else
        :class:`IntegrityError`)."""
        return self.journal.spills.read(spill)

    def verified(self, state: SessionState, proposal: Compacted) -> SessionState:
        """``state`` with only the spills C3 may trust for ``proposal``: spills whose file
        still reads back as its recorded bytes, read newest first until they hold every
        truncated part of the floor.

        Nothing else can excuse anything, so no other file is read: none at all when no
        truncation reaches into the floor.
        """
        window = floor(state, proposal)
        need = [] if window is None else _clip(state.truncated, *window)
        check = self.journal.spills.checker()
        good = []
        for s in reversed(state.spills):
            if not need:
                break
            if any(s.lo < hi and s.hi > lo for lo, hi in need) and check(s) is None:
                good.append(s)
                need = [p for lo, hi in need for p in ((lo, min(hi, s.lo)), (max(lo, s.hi), hi))]
                need = [(lo, hi) for lo, hi in need if lo < hi]
        if len(good) == len(state.spills):
            return state
        return attrs.evolve(state, spills=Ledger.of(good[::-1]))


def _clip(spans: Iterable[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """The parts of ``spans`` inside ``[lo, hi)``."""
    return [(max(a, lo), min(b, hi)) for a, b in spans if a < hi and b > lo]
