"""The pure fold from events to :class:`SessionState`.

``fold`` runs a private accumulator over the events and freezes it once, so a
replay is linear in the log length; ``apply`` is the same accumulator run for
one event (a turn skips it). The append-only parts share their buffer (see
``_ledger``) and the mappings share one dict per family of versions (see
``_pmap``), so no state a caller holds ever changes, and a fold that freezes its
state before every event (``check``) still costs O(1) per event.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any

import attrs

from reducers._claims import required_at_commit, restated, stale_at_commit
from reducers._errors import InvalidEvent
from reducers._events import (
    CallOpened,
    CallResolved,
    Checkpointed,
    Compacted,
    CompactionRefused,
    ConstraintLifted,
    ConstraintStated,
    ContextCleared,
    Event,
    Ingested,
    ItemDisposed,
    MarkerEmitted,
    MarkerInvalidated,
    MarkerRefused,
    Noted,
    Resumed,
    Retold,
    SessionConfig,
    SessionStarted,
    Spilled,
    Truncated,
    TurnAppended,
    TurnRetracted,
)
from reducers._ledger import Ledger, LedgerWriter
from reducers._pmap import PMapWriter
from reducers._state import (
    Marker,
    NegativeFact,
    Node,
    OpenCall,
    PendingConstraint,
    SessionState,
    Span,
    Spill,
    Told,
    Truncation,
    last_position,
    merge_spans,
)

_FIELDS = tuple(a.name for a in attrs.fields(SessionState))
_SET = {name: getattr(SessionState, name).__set__ for name in _FIELDS}  # slot setters
_set_version = _SET["version"]
_set_config = _SET["config"]
_set_tok_starts = _SET["tok_starts"]
_set_turn_versions = _SET["turn_versions"]
_set_call_ids = _SET["call_ids"]
_set_truncations = _SET["truncations"]
_set_spills = _SET["spills"]
_set_checkpoints = _SET["checkpoints"]
_set_truncated = _SET["truncated"]
_set_nodes = _SET["nodes"]
_set_markers = _SET["markers"]
_set_open_calls = _SET["open_calls"]
_set_constraints = _SET["constraints"]
_set_dispositions = _SET["dispositions"]
_set_withdrawn = _SET["withdrawn"]
_set_retold = _SET["retold"]
if len(_SET) != 16:  # pragma: no cover - a new field must be copied by _state_of too
    raise ImportError("SessionState's fields changed: update reducers._fold._state_of")
_new = object.__new__
_CALL_SET = tuple(getattr(OpenCall, a.name).__set__ for a in attrs.fields(OpenCall))
if len(_CALL_SET) != 5:  # pragma: no cover - a new field must be set by _open_call too
    raise ImportError("OpenCall's fields changed: update reducers._fold._open_call")


def _state_of(src: Any) -> SessionState:
    """A SessionState holding ``src``'s fields as they are: ``SessionState(**fields)``
    without the keyword and default handling (every field is given, and a frozen value)."""
    state: SessionState = _new(SessionState)
    _set_version(state, src.version)
    _set_config(state, src.config)
    _set_tok_starts(state, src.tok_starts)
    _set_turn_versions(state, src.turn_versions)
    _set_call_ids(state, src.call_ids)
    _set_truncations(state, src.truncations)
    _set_spills(state, src.spills)
    _set_checkpoints(state, src.checkpoints)
    _set_truncated(state, src.truncated)
    _set_nodes(state, src.nodes)
    _set_markers(state, src.markers)
    _set_open_calls(state, src.open_calls)
    _set_constraints(state, src.constraints)
    _set_dispositions(state, src.dispositions)
    _set_withdrawn(state, src.withdrawn)
    _set_retold(state, src.retold)
    return state


class _Acc:
    """A mutable working copy of a state; private to this module."""

    version: int
    config: SessionConfig | None
    tok_starts: Ledger[int]
    turn_versions: Ledger[int]
    call_ids: Ledger[str]
    truncations: Ledger[Truncation]
    spills: Ledger[Spill]
    checkpoints: Ledger[int]
    truncated: tuple[Span, ...]
    nodes: Mapping[str, Node]
    markers: Mapping[str, Marker]
    open_calls: Mapping[str, OpenCall]
    constraints: Mapping[str, PendingConstraint]
    dispositions: Mapping[str, NegativeFact]
    withdrawn: tuple[Span, ...]
    retold: Mapping[str, Told]

    def __init__(self, state: SessionState) -> None:
        for name in _FIELDS:
            setattr(self, name, getattr(state, name))
        self._writers: dict[str, LedgerWriter[Any]] = {}
        self._maps: dict[str, PMapWriter[str, Any]] = {}

    def grow(self, name: str, item: object) -> None:
        """Append ``item`` to the ledger ``name`` (claimed on first use)."""
        self.writer(name).append(item)

    def writer(self, name: str) -> LedgerWriter[Any]:
        """The claimed writer of the ledger ``name``."""
        writer = self._writers.get(name)
        if writer is None:
            writer = self._writers[name] = getattr(self, name).writer()
            setattr(self, name, writer)
        return writer

    def abort(self) -> None:
        """Undo the writes of an unfinished fold so shared buffers stay as they were."""
        for writer in self._writers.values():
            writer.abort()
        for mapping in self._maps.values():
            mapping.abort()
        self._writers.clear()
        self._maps.clear()

    def mut(self, name: str) -> PMapWriter[str, Any]:
        """The mapping ``name``, written in place (claimed on first write)."""
        mapping = self._maps.get(name)
        if mapping is None:
            mapping = self._maps[name] = PMapWriter(getattr(self, name))
            setattr(self, name, mapping)
        return mapping

    def freeze(self, *, release: bool = True) -> SessionState:
        """The current state; later writes never change it.

        With ``release=False`` the ledgers and mappings stay claimed for more writes
        (the frozen state sees only what was written before): O(1), whatever their size.
        """
        if release:
            for name, writer in self._writers.items():
                setattr(self, name, writer.close())
            for name, mapping in self._maps.items():
                setattr(self, name, mapping.close())
            self._writers.clear()
            self._maps.clear()
            return _state_of(self)
        state = _state_of(self)
        for name, writer in self._writers.items():
            _SET[name](state, writer.view())
        for name, mapping in self._maps.items():
            _SET[name](state, mapping.freeze())
        return state

    @property
    def last_position(self) -> int:
        return last_position(self.config, self.tok_starts)


def _session_started(acc: _Acc, e: SessionStarted) -> None:
    acc.config = SessionConfig(**attrs.asdict(e))


def _turn_appended(acc: _Acc, e: TurnAppended) -> None:
    tok = acc.writer("tok_starts")
    tok.append(tok.last + e.tokens)
    acc.writer("turn_versions").append(acc.version + 1)


def _open_call(call_id: str, kind: str, name: str, position: int, version: int) -> OpenCall:
    """``OpenCall(...)`` without the keyword handling (the hot path of a replay: every
    value comes from a validated event or the fold itself)."""
    call: OpenCall = _new(OpenCall)
    set_id, set_kind, set_name, set_position, set_version = _CALL_SET
    set_id(call, call_id)
    set_kind(call, kind)
    set_name(call, name)
    set_position(call, position)
    set_version(call, version)
    return call


def _call_opened(acc: _Acc, e: CallOpened) -> None:
    call_id, position = e.call_id, last_position(acc.config, acc.tok_starts)
    acc.mut("open_calls")[call_id] = _open_call(call_id, e.kind, e.name, position, acc.version + 1)
    if call_id not in acc.call_ids:
        acc.grow("call_ids", call_id)


def _call_resolved(acc: _Acc, e: CallResolved) -> None:
    acc.mut("open_calls").pop(e.call_id, None)
    _forget_told(acc, "open_call", e.call_id)


def _constraint_stated(acc: _Acc, e: ConstraintStated) -> None:
    changed = restated(acc.nodes.values(), e.key, acc.constraints.get(e.key), e.text)
    if changed:
        nodes = acc.mut("nodes")
        for node in changed:
            nodes[node.node_id] = node
    acc.mut("constraints")[e.key] = PendingConstraint(
        key=e.key, text=e.text, position=acc.last_position, version=acc.version + 1
    )


def _constraint_lifted(acc: _Acc, e: ConstraintLifted) -> None:
    acc.mut("constraints").pop(e.key, None)
    _forget_told(acc, "constraint", e.key)


def _forget_told(acc: _Acc, kind: str, key: str) -> None:
    """A resolved call or a lifted constraint is no longer owed: its re-tell is history."""
    slot = Told.slot(kind, key)
    if slot in acc.retold:
        acc.mut("retold").pop(slot)


def _item_disposed(acc: _Acc, e: ItemDisposed) -> None:
    acc.mut("dispositions")[e.key] = NegativeFact(
        key=e.key,
        disposition=e.disposition,
        reason=e.reason,
        position=acc.last_position,
        version=acc.version + 1,
    )


def _truncated(acc: _Acc, e: Truncated) -> None:
    cut = Truncation(lo=e.lo, hi=e.hi, reason=e.reason, version=acc.version + 1)
    acc.grow("truncations", cut)
    acc.truncated = merge_spans([*acc.truncated, (e.lo, e.hi)])


def _spilled(acc: _Acc, e: Spilled) -> None:
    spill = Spill(
        lo=e.lo,
        hi=e.hi,
        handle=e.handle,
        sha256=e.sha256,
        bytes=e.bytes,
        version=acc.version + 1,
    )
    acc.grow("spills", spill)


def _checkpointed(acc: _Acc, e: Checkpointed) -> None:
    acc.grow("checkpoints", e.at)


def _compacted(acc: _Acc, e: Compacted) -> None:
    nodes = acc.mut("nodes")
    required = required_at_commit(
        acc.open_calls.values(),
        acc.constraints.values(),
        acc.dispositions.values(),
        e.covers_lo,
        e.covers_hi,
    )
    for old in e.replaces:
        if old in nodes:
            nodes[old] = attrs.evolve(nodes[old], live=False, replaced_by=e.node_id)
    fields = attrs.asdict(e, recurse=False)
    nodes[e.node_id] = Node(
        **fields,
        **required,
        version=acc.version + 1,
        stale_constraints=stale_at_commit(e.constraints, acc.constraints),
    )


def _marker_emitted(acc: _Acc, e: MarkerEmitted) -> None:
    acc.mut("markers")[e.marker_id] = Marker(
        marker_id=e.marker_id,
        node_id=e.node_id,
        tier_depth=e.tier_depth,
        resolved_ids=e.resolved_ids,
        version=acc.version + 1,
    )


def _marker_invalidated(acc: _Acc, e: MarkerInvalidated) -> None:
    markers = acc.mut("markers")
    if e.marker_id in markers:
        markers[e.marker_id] = attrs.evolve(
            markers[e.marker_id], valid=False, invalidated_rule=e.rule, invalidated_reason=e.reason
        )


def _marker_refused(acc: _Acc, e: MarkerRefused) -> None:
    """A refused marker is known, and never trusted: resuming it falls back to raw."""
    node = acc.nodes.get(e.node_id)
    acc.mut("markers")[e.marker_id] = Marker(
        marker_id=e.marker_id,
        node_id=e.node_id,
        tier_depth=node.tier if node else 0,
        resolved_ids=(),
        version=acc.version + 1,
        valid=False,
        invalidated_rule=e.violations[0].rule if e.violations else None,
        invalidated_reason="refused at emission: " + "; ".join(str(v) for v in e.violations),
    )


def _turn_retracted(acc: _Acc, e: TurnRetracted) -> None:
    acc.withdrawn = merge_spans([*acc.withdrawn, (e.index, e.index + 1)])


def _context_cleared(acc: _Acc, e: ContextCleared) -> None:
    """Turns before ``before`` leave the working context; live summaries stop framing it."""
    if e.before:
        acc.withdrawn = merge_spans([*acc.withdrawn, (0, e.before)])
    live = [k for k, n in acc.nodes.items() if n.live]
    if live:
        nodes = acc.mut("nodes")
        for k in live:
            nodes[k] = attrs.evolve(nodes[k], live=False)


def _retold(acc: _Acc, e: Retold) -> None:
    """The re-tell turn states each obligation; the latest re-tell of one replaces any
    earlier (an obligation is re-told only while nothing in the context holds it)."""
    retold, version = acc.mut("retold"), acc.version + 1
    told = [
        *(("constraint", k, digest) for k, digest in e.constraints.items()),
        *(("negative_fact", k, d) for k, d in e.dispositions.items()),
        *(("open_call", k, "") for k in e.calls),
    ]
    for kind, key, stated in told:
        retold[Told.slot(kind, key)] = Told(
            kind=kind, key=key, turn=e.index, stated=stated, version=version
        )


def _no_state_change(acc: _Acc, e: CompactionRefused | Resumed | Noted | Ingested) -> None:
    """Refusals, resumes, notes and ingest positions are records: they change no tier state."""


_HANDLERS: dict[type[Any], Callable[[_Acc, Any], None]] = {
    SessionStarted: _session_started,
    TurnAppended: _turn_appended,
    CallOpened: _call_opened,
    CallResolved: _call_resolved,
    ConstraintStated: _constraint_stated,
    ConstraintLifted: _constraint_lifted,
    ItemDisposed: _item_disposed,
    Truncated: _truncated,
    Spilled: _spilled,
    Checkpointed: _checkpointed,
    Compacted: _compacted,
    CompactionRefused: _no_state_change,
    MarkerEmitted: _marker_emitted,
    MarkerRefused: _marker_refused,
    MarkerInvalidated: _marker_invalidated,
    Resumed: _no_state_change,
    TurnRetracted: _turn_retracted,
    ContextCleared: _context_cleared,
    Noted: _no_state_change,
    Retold: _retold,
    Ingested: _no_state_change,
}


Keys = Container[str]
KeyedCheck = Mapping[type[Any], Callable[[Keys, Keys, Keys, Any], None]]
"""Per event type, a check from ``(call_ids, open_calls, constraints, event)``."""


def fold(
    events: Iterable[Event],
    state: SessionState | None = None,
    *,
    check: Callable[[SessionState, Event], None] | None = None,
    turn_check: Callable[[int, int, TurnAppended], None] | None = None,
    keyed_check: KeyedCheck | None = None,
) -> SessionState:
    """Fold ``events`` onto ``state`` (the empty state by default); linear in the events.

    ``check(state, event)``, if given, sees the state before each event and may
    raise to stop the fold (``eventstore`` validates batches this way).
    ``turn_check(turns, tokens_total, turn)``, if given, stands in for ``check`` on
    the turns of a started session: it sees the two numbers a turn's validity
    depends on, so a checked fold of turns builds no state per turn.
    ``keyed_check``, if given, stands in for ``check`` likewise on the events of the
    types it maps: each is checked from the call ids seen, the open calls and the
    pending constraints as they are before it (read in place, no state built).
    """
    acc = _Acc(state if state is not None else SessionState())
    handlers, keyed = _HANDLERS, keyed_check or {}
    # Turns (most of any log) are folded inline: their two ledgers take the raw appends
    # and count them (sync), and the version is counted here, before anything reads them.
    tok: LedgerWriter[int] | None = None
    versions: LedgerWriter[int] | None = None
    unsynced, version = False, acc.version
    try:
        for event in events:
            if type(event) is TurnAppended:
                if tok is None or versions is None:
                    tok, versions = acc.writer("tok_starts"), acc.writer("turn_versions")
                    push_tok, push_version, total = tok.pusher(), versions.pusher(), tok.last
                    turns = len(tok) - 1
                if check is not None:
                    if turn_check is not None and acc.config is not None:
                        turn_check(turns, total, event)
                    else:
                        if unsynced:
                            unsynced = _sync(tok, versions)
                        acc.version = version
                        check(acc.freeze(release=False), event)
                total += event.tokens
                push_tok(total)
                version += 1
                push_version(version)
                turns += 1
                unsynced = True
            else:
                if unsynced and tok is not None and versions is not None:  # a turn was pushed
                    tok.sync()
                    versions.sync()
                    unsynced = False
                acc.version = version
                if check is not None:
                    rule = keyed.get(type(event)) if acc.config is not None else None
                    if rule is not None:
                        rule(acc.call_ids, acc.open_calls, acc.constraints, event)
                    else:
                        check(acc.freeze(release=False), event)
                handler = handlers.get(type(event))
                if handler is None:
                    raise InvalidEvent(f"not a tierlog event: {type(event).__name__}")
                handler(acc, event)
                version += 1
        if unsynced:
            _sync(tok, versions)
        acc.version = version
    except BaseException:
        acc.abort()
        raise
    return acc.freeze()


def _sync(*writers: LedgerWriter[Any] | None) -> bool:
    for writer in writers:
        if writer is not None:
            writer.sync()
    return False


def apply(state: SessionState, event: Event) -> SessionState:
    """The state after one more event; ``state`` is unchanged."""
    if type(event) is TurnAppended:
        return _apply_turn(state, event)
    return fold((event,), state)


def _apply_turn(state: SessionState, event: TurnAppended) -> SessionState:
    """``fold((event,), state)`` for one turn, without the accumulator (the hot path of
    a live session): two ledger appends and a new state sharing every other field."""
    tok = state.tok_starts
    after = _state_of(state)
    _set_version(after, state.version + 1)
    _set_tok_starts(after, tok.append(tok[-1] + event.tokens))
    _set_turn_versions(after, state.turn_versions.append(state.version + 1))
    return after
