"""tierlog as the session store of the OpenAI Agents SDK (``pip install tierlog[openai-agents]``).

``TierlogSession`` implements the SDK's ``Session`` protocol (and its
``run_compaction`` hook) on one journal session:

- every item the runner adds is one L0 turn holding the item's exact JSON, so
  ``get_items`` returns what ``add_items`` was given; a ``function_call`` (or
  any other tool call item) opens a call, its ``*_output`` resolves it;
- ``pop_item`` and ``clear_session`` append ``TurnRetracted`` / ``ContextCleared``:
  the items leave ``get_items`` and stay in the log;
- ``run_compaction`` hands a summarizer the items before a retained tail plus
  every obligation the summary must carry, and proposes the result through
  ``Session.compact`` with the marker gate on: a summary that drops an open
  call, a pending constraint or a negative fact is refused (recorded, the raw
  transcript spilled) and the runner sees its items unchanged.

Threads: a journal connection belongs to the thread that opened it. Given a
path, a ``TierlogSession`` opens the journal on a worker thread of its own and
runs every journal call there, so the event loop never waits on an fsync and
the runtime methods (``state_constraint``, ...) work from any thread, sync
tools included; one thread also serialises the calls, so each method is one
consistent step (``compact`` is two: the plan, then, after the summarizer, a
commit at the planned version, dropped if another writer moved the session).
Given an open ``Journal``, the calls run in the calling thread, which must be
the one that opened it.
"""

from __future__ import annotations

import asyncio
import bisect
import inspect
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeAlias, TypeVar, cast

import attrs
import structlog

from eventstore._errors import ConcurrencyError
from eventstore._journal import Journal, check_session_id
from eventstore._journal import open as open_journal
from eventstore._session import Session
from eventstore._values import Turn
from invariants import UnrecoverableCompactionError
from reducers import (
    CallOpened,
    CallResolved,
    Event,
    InvalidEvent,
    JournalError,
    NegativeFact,
    Node,
    OpenCall,
    PendingConstraint,
    SessionConfig,
    SessionState,
    TurnAppended,
    in_spans,
    merge_spans,
)

try:
    from agents import RunContextWrapper, TResponseInputItem
    from agents.memory import OpenAIResponsesCompactionArgs, SessionSettings
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "eventstore.openai_agents needs the OpenAI Agents SDK: pip install 'tierlog[openai-agents]'"
    ) from exc

__all__ = [
    "DEFAULT_CONFIG",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "SummaryRequest",
    "TierlogSession",
]

T = TypeVar("T")
Item: TypeAlias = dict[str, Any]
Span = tuple[int, int]

DEFAULT_CONFIG: Final = SessionConfig(
    window_tokens=128_000,
    trigger_tokens=96_000,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="spill",
)
"""The configuration of a session a ``TierlogSession`` starts without one."""

# tool call item type -> the item type that answers it (the SDK's own pairing)
CALL_OUTPUTS: Final = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
}
_OUTPUT_CALLS: Final = {output: call for call, output in CALL_OUTPUTS.items()}
_NOT_MODEL_OUTPUT: Final = frozenset({"mcp_approval_response", "item_reference"})
SUMMARY_ROLE: Final = "system"
_RETRIES: Final = 3
_OUTCOME_CHARS: Final = 200


def _ids(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        raise InvalidEvent(f"expected a sequence of ids, got the string {value!r}")
    return tuple(value)


def _dispositions(value: Mapping[str, str]) -> dict[str, str]:
    return dict(value)


@attrs.frozen(kw_only=True)
class Summary:
    """A summarizer's answer: the text, and what it carries.

    ``resolved_ids``/``unresolved_ids`` list the open calls it accounts for,
    ``constraints`` the pending constraint keys, ``dispositions`` the negative
    facts (key -> "rejected", "failed" or "superseded"). ``tokens`` defaults to an
    estimate of the summary item.
    """

    text: str = attrs.field(validator=attrs.validators.instance_of(str))
    resolved_ids: tuple[str, ...] = attrs.field(default=(), converter=_ids)
    unresolved_ids: tuple[str, ...] = attrs.field(default=(), converter=_ids)
    constraints: tuple[str, ...] = attrs.field(default=(), converter=_ids)
    dispositions: Mapping[str, str] = attrs.field(factory=dict, converter=_dispositions)
    tokens: int | None = None


@attrs.frozen(kw_only=True)
class SummaryRequest:
    """What a summarizer is asked to fold into one summary.

    ``items`` is the context the summary replaces, in order: the previous summary
    first (if any), then the raw items, reaching back far enough that the session's
    recovery floor is among them. ``retained`` is the tail kept verbatim after it.
    ``open_calls``, ``constraints`` and ``negative_facts`` are the obligations the
    summary must carry: an open call in ``resolved_ids`` or ``unresolved_ids``, a
    constraint key in ``constraints``, a negative fact in ``dispositions`` with its
    disposition. A summary that leaves one out is refused.
    """

    session_id: str
    items: tuple[Item, ...]
    retained: tuple[Item, ...]
    open_calls: tuple[OpenCall, ...]
    constraints: tuple[PendingConstraint, ...]
    negative_facts: tuple[NegativeFact, ...]

    def carry_all(self, text: str, *, tokens: int | None = None) -> Summary:
        """A summary of ``text`` that carries every obligation handed over (open calls
        as unresolved): for a summarizer whose prompt includes them all."""
        return Summary(
            text=text,
            unresolved_ids=[c.call_id for c in self.open_calls],
            constraints=[c.key for c in self.constraints],
            dispositions={f.key: f.disposition for f in self.negative_facts},
            tokens=tokens,
        )


class SummarizerError(JournalError):
    """The summarizer raised; nothing was written. Its exception is the ``__cause__``."""


Summarizer: TypeAlias = Callable[[SummaryRequest], Summary | Awaitable[Summary]]


@attrs.frozen
class _Entry:
    """One item of the view: the turn ``index``, or a live summary ``node``."""

    index: int | None
    item: Item
    node: Node | None = None


@attrs.frozen
class _Slot:
    """A run of the view: one live summary node, or the resident turns ``[lo, hi)``."""

    node: Node | None
    lo: int
    hi: int

    @property
    def size(self) -> int:
        return 1 if self.node is not None else self.hi - self.lo


@attrs.frozen(kw_only=True)
class _Plan:
    """A compaction worked out on the state at ``version``, waiting for its summary."""

    version: int
    request: SummaryRequest
    tier: int
    input: Span
    covers: Span
    tail_start: int
    replaces: tuple[str, ...]


class TierlogSession:
    """An OpenAI Agents SDK session kept in a tierlog journal.

    ``db`` is what ``eventstore.open`` accepts (a path: the journal is opened, and
    created if needed, on a worker thread this session owns) or an open ``Journal``
    (used from the thread that opened it). ``config`` configures a new
    journal session (``DEFAULT_CONFIG`` if omitted); an existing one keeps its own.
    ``summarizer`` enables ``run_compaction``; ``keep_items`` is how many of the
    latest items a compaction retains verbatim (more when a tool output's call or
    a reasoning item must stay with it).
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        db: str | Path | Journal,
        *,
        config: SessionConfig | None = None,
        summarizer: Summarizer | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        keep_items: int = 4,
    ) -> None:
        check_session_id(session_id)
        if type(keep_items) is not int or keep_items < 0:
            raise InvalidEvent(f"keep_items must be an integer >= 0, not {keep_items!r}")
        if config is not None and not isinstance(config, SessionConfig):
            raise InvalidEvent(f"config must be a SessionConfig, not {type(config).__name__}")
        self.session_id = session_id
        self.session_settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self.summarizer = summarizer
        self.keep_items = keep_items
        self._log = structlog.wrap_logger(
            logging.getLogger("tierlog"), wrapper_class=structlog.stdlib.BoundLogger
        ).bind(session_id=session_id)
        self._closed = False
        self._usage_entries: list[Any] | None = None
        self._usage_seen = 0
        self._executor: ThreadPoolExecutor | None = None
        self._owner = threading.get_ident()
        if isinstance(db, Journal):
            self._journal = db
            self._session = self._do(lambda: _open_session(db, session_id, config))
            self._on_unsafe = self._do(lambda: _on_unsafe(self._session))
            return
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tierlog")

        def start() -> tuple[Journal, Session]:
            self._owner = threading.get_ident()
            journal = open_journal(db)
            try:
                return journal, _open_session(journal, session_id, config)
            except BaseException:
                journal.close()
                raise

        try:
            self._journal, self._session = self._executor.submit(start).result()
        except BaseException:
            self._executor.shutdown(wait=True)
            raise
        self._on_unsafe = self._do(lambda: _on_unsafe(self._session))

    def __repr__(self) -> str:
        return f"TierlogSession({self.session_id!r}, {self._journal.recorder.location!r})"

    # -- the SDK's Session protocol ------------------------------------------------------
    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        """The items the runner sees: live summaries, then the resident items, in order.

        ``limit`` (else ``session_settings.limit``) keeps the latest ``limit`` items.
        """
        self._check_open()
        n = resolve_session_limit(limit, self.session_settings)
        if n == 0:
            return []
        keep = n if n is not None and n > 0 else None  # SQLite's LIMIT -1 is no limit
        entries = await self._ado(lambda: self._entries(self._session.state, keep))
        return [cast(TResponseInputItem, e.item) for e in entries]

    async def add_items(
        self, items: list[TResponseInputItem], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        """Append each item as a turn holding its exact JSON, in one transaction.

        The items a model produced count the output tokens its usage reports when the
        runner passes it (at most the session's ``window_tokens``; a count that is not
        an integer >= 0 is ignored, with a warning); the others, and the model's items
        without a usable count, one token per four bytes of JSON.
        """
        self._check_open()
        if not items:
            return
        texts = [_encode(i, item) for i, item in enumerate(items)]
        data = cast(list[Item], items)
        reported = self._reported(data, wrapper)

        def plan(state: SessionState) -> list[Event]:
            return self._plan_items(state, data, texts, self._tokens(state, data, texts, reported))

        await self._ado(lambda: self._retry(plan))

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        """Take the latest item out of the context (``TurnRetracted``) and return it.

        A summary that is the only item left goes with a ``ContextCleared``.
        """
        self._check_open()
        item = await self._ado(self._pop)
        return cast(TResponseInputItem | None, item)

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Take every item out of the context (``ContextCleared``); the log keeps them."""
        self._check_open()
        await self._ado(self._clear)

    async def run_compaction(
        self,
        args: OpenAIResponsesCompactionArgs | None = None,
        *,
        wrapper: RunContextWrapper[Any] | None = None,
    ) -> None:
        """The runner's hook after each turn: compact once occupancy reaches the trigger
        (or when ``args["force"]``).

        With ``on_unsafe="spill"`` compaction never ends the run: a refused summary is
        recorded and spilled, and a summarizer that fails (``SummarizerError``) or
        claims what the session does not hold (``InvalidEvent``, nothing written) is
        logged as a ``compaction_failed`` warning on the ``tierlog`` logger; the runner
        sees its items unchanged either way. With ``on_unsafe="halt"`` the refusal
        (UnrecoverableCompactionError), the SummarizerError or the InvalidEvent ends
        the run."""
        self._check_open()
        try:
            await self.compact(force=bool((args or {}).get("force", False)))
        except UnrecoverableCompactionError as refused:
            if refused.action == "halted":
                raise
            self._log.info("refused summary spilled; the runner's items are unchanged")
        except Exception as failed:
            if self._on_unsafe == "halt":
                raise
            self._log.warning(
                "compaction_failed",
                error=type(failed).__name__,
                detail=str(failed)[:500],
                on_unsafe=self._on_unsafe,
            )

    # -- compaction ----------------------------------------------------------------------
    async def compact(self, *, force: bool = False) -> Node | None:
        """Summarize the items before the retained tail through the gate.

        Returns the committed node, or ``None`` when there is nothing to do (no
        summarizer, below the trigger, nothing before the tail, or another writer
        moved the session while the summarizer ran). Raises
        UnrecoverableCompactionError when the summary is refused (recorded either way),
        SummarizerError when the summarizer raises (its error is the ``__cause__``),
        InvalidEvent when it returns no Summary or one whose claims name a call, a
        pending constraint or a negative fact the session does not hold, or a call as
        both resolved and unresolved (nothing written for either).
        """
        self._check_open()
        summarizer = self.summarizer
        if summarizer is None:
            return None
        plan = await self._ado(lambda: self._plan_compaction(force))
        if plan is None:
            return None
        try:
            answer = summarizer(plan.request)
            summary = await answer if inspect.isawaitable(answer) else answer
        except Exception as exc:
            raise SummarizerError(
                f"the summarizer failed: {type(exc).__name__}: {exc}"[:500]
            ) from exc
        if not isinstance(summary, Summary):
            raise InvalidEvent(f"the summarizer returned {type(summary).__name__}, not a Summary")
        return await self._ado(lambda: self._commit_compaction(plan, summary))

    # -- what runtimes state through the session -------------------------------------------
    def state_constraint(self, key: str, text: str) -> None:
        """Record a user constraint the context must keep until it is lifted."""
        self._do(lambda: self._session.state_constraint(key, text))

    def lift_constraint(self, key: str) -> None:
        """Lift a pending constraint."""
        self._do(lambda: self._session.lift_constraint(key))

    def dispose(self, key: str, disposition: str, reason: str) -> None:
        """Record a negative fact: ``key`` was rejected, failed or superseded."""
        self._do(lambda: self._session.dispose(key, disposition, reason))

    @property
    def state(self) -> SessionState:
        """The journal session's state (a frozen value)."""
        return self._do(lambda: self._session.state)

    def run(self, fn: Callable[[Session], T]) -> T:
        """``fn(session)`` on the journal's thread: for the rest of the tierlog API
        (``emit_marker``, ``resume``, ``events``...)."""
        return self._do(lambda: fn(self._session))

    def close(self) -> None:
        """Close the journal if this session opened it (idempotent).

        Called on the journal's own thread (from a ``run(fn)`` callback), it closes
        the journal right there and lets the thread end once the callback returns.
        """
        if self._closed:
            return
        self._closed = True
        if self._executor is None:
            return
        if threading.get_ident() == self._owner:  # waiting on our own thread would hang
            self._journal.close()
            self._executor.shutdown(wait=False)
            return
        self._executor.submit(self._journal.close).result()
        self._executor.shutdown(wait=True)

    def __enter__(self) -> TierlogSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- running on the journal's thread ---------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise JournalError(f"TierlogSession {self.session_id!r} is closed")

    def _do(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the journal's thread, from any thread."""
        self._check_open()
        if threading.get_ident() == self._owner:
            return fn()
        if self._executor is None:
            raise JournalError(
                "this TierlogSession runs on the Journal it was given, which belongs to the"
                " thread that opened it: give it a path to let it own a journal thread"
            )
        return self._executor.submit(fn).result()

    async def _ado(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the journal's thread, awaited without blocking the event loop."""
        self._check_open()
        if self._executor is None:
            return self._do(fn)
        return await asyncio.wrap_future(self._executor.submit(fn))

    def _retry(self, plan: Callable[[SessionState], Sequence[Event]]) -> None:
        """Commit ``plan(state)`` at that state's version; re-plan if another process wrote."""
        for attempt in range(_RETRIES):
            state = self._session.state
            try:
                self._session.extend(plan(state), expected_version=state.version)
                return
            except ConcurrencyError:
                if attempt == _RETRIES - 1:
                    raise

    # -- items <-> turns -------------------------------------------------------------------
    def _reported(self, items: list[Item], wrapper: object) -> int | None:
        """The output tokens the runner's usage reports for responses not yet counted,
        or ``None`` (no model item, no usage, or a count that is not an integer >= 0)."""
        if not any(_is_model_output(item) for item in items):
            return None
        entries = getattr(getattr(wrapper, "usage", None), "request_usage_entries", None)
        if not isinstance(entries, list):
            return None
        seen = self._usage_seen if entries is self._usage_entries else 0
        fresh = entries[seen:]
        self._usage_entries, self._usage_seen = entries, len(entries)
        counts = [getattr(e, "output_tokens", None) for e in fresh]
        junk = [c for c in counts if c is not None and not _is_count(c)]
        if junk:
            self._log.warning(
                "usage_ignored", output_tokens=repr(junk[0])[:80], reason="not an integer >= 0"
            )
            return None
        return sum(cast(int, c) for c in counts if c is not None)

    def _tokens(
        self, state: SessionState, items: list[Item], texts: list[str], reported: int | None
    ) -> list[int]:
        """Per item: its share of the new responses' output tokens, else an estimate.

        A reported count above the session's ``window_tokens`` is clamped to it: one
        response cannot put more in the context than the context holds."""
        tokens = [_estimate(text) for text in texts]
        if not reported:
            return tokens
        window = state.config.window_tokens if state.config is not None else reported
        if reported > window:
            self._log.warning("usage_clamped", output_tokens=reported, window_tokens=window)
            reported = window
        produced = [i for i, item in enumerate(items) if _is_model_output(item)]
        shares = _split(reported, [tokens[i] for i in produced])
        for i, share in zip(produced, shares, strict=True):
            tokens[i] = share
        return tokens

    def _plan_items(
        self, state: SessionState, items: list[Item], texts: list[str], tokens: list[int]
    ) -> list[Event]:
        """The turns (and call events) for ``items`` appended after ``state``."""
        events: list[Event] = []
        seen = set(state.call_ids)
        open_now = dict(state.open_calls)
        away = _budget_gone(state)
        index = state.turns

        def turn(role: str, content: str, count: int) -> None:
            nonlocal index
            events.append(TurnAppended(index=index, role=role, content=content, tokens=count))
            index += 1

        for item, text, count in zip(items, texts, tokens, strict=True):
            kind = item.get("type")
            call_id = item.get("call_id")
            if kind in _OUTPUT_CALLS and isinstance(call_id, str) and call_id in open_now:
                again = self._call_away(state, away, open_now[call_id], _OUTPUT_CALLS[kind])
                if again is not None:  # its call was summarized or truncated: show it again
                    turn(again.role, again.content, again.tokens)
                turn(_role(item), text, count)
                events.append(CallResolved(call_id=call_id, outcome=_outcome(item)))
                del open_now[call_id]
                continue
            turn(_role(item), text, count)
            if (
                kind in CALL_OUTPUTS
                and isinstance(call_id, str)
                and call_id
                and call_id not in seen
            ):
                name = item.get("name")
                label = name if isinstance(name, str) and name else str(kind)
                events.append(CallOpened(call_id=call_id, kind="tool_call", name=label))
                seen.add(call_id)
                open_now[call_id] = OpenCall(
                    call_id=call_id, kind="tool_call", name=label, position=-1
                )
        return events

    def _call_away(
        self, state: SessionState, away: tuple[Span, ...], call: OpenCall, kind: str
    ) -> Turn | None:
        """The turn holding ``call``'s item, if a summary or truncation took it away."""
        if call.position < 0 or not state.turns:  # opened in this batch: still resident
            return None
        index = state.turn_index(call.position)
        if not 0 <= index < state.turns or not in_spans(away, index):
            return None
        (held,) = self._session.turns(index, index + 1)
        item = _decode(held.role, held.content)
        if item.get("type") != kind or item.get("call_id") != call.call_id:
            return None  # not an item this adapter wrote: nothing to show again
        return held

    def _entries(self, state: SessionState, limit: int | None) -> list[_Entry]:
        """The view: live summaries and resident items, the latest ``limit`` of them."""
        slots = _view(state)
        if limit is not None:
            slots = _last(slots, limit)
        out: list[_Entry] = []
        for slot in slots:
            if slot.node is not None:
                out.append(_Entry(None, _summary_item(slot.node), slot.node))
            else:
                texts = self._texts(state, slot.lo, slot.hi)
                out += [_Entry(index, _decode(role, content)) for index, role, content in texts]
        return out

    def _texts(self, state: SessionState, lo: int, hi: int) -> Iterator[tuple[int, str, str]]:
        """``(index, role, content)`` of the turns ``lo <= index < hi``."""
        if lo >= hi:
            return iter(())
        turns = self._session.effects.turns(state, [(lo, hi)])
        return ((t["index"], t["role"], t["content"]) for t in turns)

    def _pop(self) -> Item | None:
        for attempt in range(_RETRIES):
            state = self._session.state
            slots = _view(state)
            if not slots:
                return None
            last = slots[-1]
            try:
                if last.node is None:
                    (turn,) = self._texts(state, last.hi - 1, last.hi)
                    self._session.retract_turn(
                        last.hi - 1, "pop_item", expected_version=state.version
                    )
                    return _decode(turn[1], turn[2])
                if len(slots) > 1:
                    raise JournalError(
                        f"pop_item: the latest item is summary {last.node.node_id} with items"
                        " before it; clear_session takes them all"
                    )
                self._session.clear_context(
                    "pop_item took the summary, the only item", expected_version=state.version
                )
                return _summary_item(last.node)
            except ConcurrencyError:
                if attempt == _RETRIES - 1:
                    raise
        return None  # pragma: no cover - the loop returns or raises

    def _clear(self) -> None:
        for attempt in range(_RETRIES):
            state = self._session.state
            if not _view(state):
                return
            try:
                self._session.clear_context("clear_session", expected_version=state.version)
                return
            except ConcurrencyError:
                if attempt == _RETRIES - 1:
                    raise

    # -- compaction ------------------------------------------------------------------------
    def _plan_compaction(self, force: bool) -> _Plan | None:
        state = self._session.state
        cfg = state.config
        if cfg is None or (not force and state.occupancy < cfg.trigger_tokens):
            return None
        entries = self._entries(state, None)
        t = _tail_index(entries, self.keep_items)
        before, tail = entries[:t], entries[t:]
        raw = [e.index for e in before if e.index is not None]
        if not raw or any(e.index is None for e in tail):
            return None  # nothing new to fold, or a summary inside the tail (not ours)
        first_tail = tail[0].index if tail else None
        tail_start = state.end if first_tail is None else state.position_of_turn(first_tail)
        nodes = [e.node for e in before if e.node is not None]
        first_raw = state.position_of_turn(raw[0])
        covers_lo = min([first_raw, *(n.covers_lo for n in nodes)])
        # the summarizer must see the recovery floor raw (C2), even where the previous
        # summary covers it; withdrawn turns are not handed over (they left the context)
        input_lo = min(first_raw, _floor_start(state, tail_start))
        items = [_summary_item(n) for n in nodes]
        items += self._raw_items(state, input_lo, tail_start)

        evicted = state.evicted

        def owed(position: int) -> bool:  # not resident once the summary replaces the rest
            return position < tail_start or in_spans(evicted, position)

        request = SummaryRequest(
            session_id=self.session_id,
            items=tuple(items),
            retained=tuple(e.item for e in tail),
            open_calls=tuple(c for _, c in sorted(state.open_calls.items()) if owed(c.position)),
            constraints=tuple(c for _, c in sorted(state.constraints.items()) if owed(c.position)),
            negative_facts=tuple(
                f for _, f in sorted(state.dispositions.items()) if owed(f.position)
            ),
        )
        return _Plan(
            version=state.version,
            request=request,
            tier=2 if nodes else 1,
            input=(input_lo, tail_start),
            covers=(covers_lo, tail_start),
            tail_start=tail_start,
            replaces=tuple(n.node_id for n in nodes),
        )

    def _raw_items(self, state: SessionState, lo: int, hi: int) -> list[Item]:
        """Raw items of ``[lo, hi)`` neither withdrawn nor truncated, read from the log."""
        cut = merge_spans([*state.withdrawn, *_index_spans(state, state.truncated)])
        first = state.turn_index(lo)
        stop = state.turn_stop(hi)
        texts = self._texts(state, first, stop)
        return [_decode(role, text) for index, role, text in texts if not in_spans(cut, index)]

    def _commit_compaction(self, plan: _Plan, summary: Summary) -> Node | None:
        _check_claims(self._session.state, summary)
        item = {"role": SUMMARY_ROLE, "content": summary.text}
        estimate = _estimate(json.dumps(item, ensure_ascii=False))
        tokens = summary.tokens if summary.tokens is not None else estimate
        try:
            return self._session.compact(
                tier=plan.tier,
                input=plan.input,
                covers=plan.covers,
                tail_start=plan.tail_start,
                summary=summary.text,
                tokens=tokens,
                dispositions=summary.dispositions,
                resolved_ids=summary.resolved_ids,
                unresolved_ids=summary.unresolved_ids,
                constraints=summary.constraints,
                replaces=plan.replaces,
                expected_version=plan.version,
                require_marker=True,
            )
        except ConcurrencyError:
            self._log.info("compaction dropped: the session moved while the summarizer ran")
            return None


# -- pure helpers -------------------------------------------------------------------------
def _open_session(journal: Journal, session_id: str, config: SessionConfig | None) -> Session:
    """The journal session ``session_id``, started with ``config`` if it is new."""
    if journal.has_session(session_id):
        return journal.session(session_id)
    try:
        return journal.start_session(session_id, config or DEFAULT_CONFIG)
    except InvalidEvent:  # another process started it in between
        return journal.session(session_id)


def _check_claims(state: SessionState, summary: Summary) -> None:
    """InvalidEvent unless every claim of ``summary`` is about something the session
    has: a call it saw (never both resolved and unresolved), a pending constraint, a
    negative fact with the disposition it was recorded with."""
    problems: list[str] = []
    unknown = [
        c for c in (*summary.resolved_ids, *summary.unresolved_ids) if c not in state.call_ids
    ]
    if unknown:
        problems.append(f"unknown call(s) {', '.join(map(repr, unknown))}")
    both = sorted(set(summary.resolved_ids) & set(summary.unresolved_ids))
    if both:
        problems.append(f"call(s) {', '.join(map(repr, both))} both resolved and unresolved")
    loose = [k for k in summary.constraints if k not in state.constraints]
    if loose:
        problems.append(f"no pending constraint(s) {', '.join(map(repr, loose))}")
    for key, disposition in summary.dispositions.items():
        fact = state.dispositions.get(key)
        if fact is None:
            problems.append(f"no negative fact {key!r}")
        elif fact.disposition != disposition:
            problems.append(f"negative fact {key!r} is {fact.disposition!r}, not {disposition!r}")
    if problems:
        raise InvalidEvent("the summary claims " + "; ".join(problems))


def _on_unsafe(session: Session) -> str:
    """The session's ``on_unsafe`` ("spill" or "halt"); it never changes."""
    config = session.state.config
    return config.on_unsafe if config is not None else DEFAULT_CONFIG.on_unsafe


def _summary_item(node: Node) -> Item:
    """The item a live summary node shows the runner: a system message with its text."""
    return {"role": SUMMARY_ROLE, "content": node.summary}


def _encode(position: int, item: object) -> str:
    """The item's JSON text (key order kept), or InvalidEvent."""
    if not isinstance(item, dict):
        raise InvalidEvent(f"item {position}: expected a JSON object, got {type(item).__name__}")
    try:
        text = json.dumps(item, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidEvent(f"item {position} is not JSON data: {exc}") from None
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: keep it escaped
        text = json.dumps(item)
    return text


def _decode(role: str, content: str) -> Item:
    """The item a turn holds; a turn that holds no JSON object shows as a message."""
    try:
        item = json.loads(content)
    except ValueError:
        item = None
    if isinstance(item, dict):
        return item
    return {"role": role, "content": content}


def _role(item: Item) -> str:
    for key in ("role", "type"):
        value = item.get(key)
        if isinstance(value, str) and value:
            return value
    return "item"


def _outcome(item: Item) -> str:
    output = item.get("output")
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return text if len(text) <= _OUTCOME_CHARS else text[: _OUTCOME_CHARS - 1] + "…"


def _estimate(text: str) -> int:
    """About one token per four bytes of UTF-8, at least one."""
    return max(1, (len(text.encode("utf-8", "surrogatepass")) + 3) // 4)


def _is_count(value: object) -> bool:
    """Whether ``value`` is a token count: an integer >= 0 (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_model_output(item: Item) -> bool:
    """Whether a model produced the item (an assistant message, a call, reasoning...)."""
    role = item.get("role")
    if role is not None:
        return bool(role == "assistant")
    kind = item.get("type")
    return (
        isinstance(kind, str)
        and kind not in _NOT_MODEL_OUTPUT
        and kind not in _OUTPUT_CALLS
        and not kind.endswith("_output")
    )


def _split(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights`` (largest remainders), each at least 1."""
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    shares = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (shares[i] - exact[i], i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return [max(1, s) for s in shares]


def _index_spans(state: SessionState, spans: Iterable[Span]) -> list[Span]:
    """Position spans as turn-index spans."""
    return [(state.turn_index(lo), state.turn_stop(hi)) for lo, hi in spans]


def _budget_gone(state: SessionState) -> tuple[Span, ...]:
    """Turn indices a live summary or a truncation took out of the context."""
    covered = ((n.covers_lo, n.covers_hi) for n in state.live_nodes)
    return merge_spans(_index_spans(state, [*state.truncated, *covered]))


def _view(state: SessionState) -> list[_Slot]:
    """Live summaries and runs of resident turns, in the order the runner sees them."""
    gone = merge_spans([*_budget_gone(state), *state.withdrawn])
    keyed = [
        ((state.turn_index(n.covers_lo), 0), _Slot(node=n, lo=0, hi=0)) for n in state.live_nodes
    ]
    lo = 0
    for gone_lo, gone_hi in (*gone, (state.turns, state.turns)):
        if lo < gone_lo:
            keyed.append(((lo, 1), _Slot(node=None, lo=lo, hi=gone_lo)))
        lo = max(lo, gone_hi)
    return [slot for _, slot in sorted(keyed, key=lambda pair: pair[0])]


def _last(slots: list[_Slot], limit: int) -> list[_Slot]:
    """The slots holding the latest ``limit`` items (the first one cut if needed)."""
    out: list[_Slot] = []
    for slot in reversed(slots):
        if limit <= 0:
            break
        if slot.size > limit:
            slot = attrs.evolve(slot, lo=slot.hi - limit)
        out.append(slot)
        limit -= slot.size
    return out[::-1]


def _tail_index(entries: Sequence[_Entry], keep: int) -> int:
    """Where the retained tail starts in the view: the latest ``keep`` items, moved
    earlier until no tool output in it is cut from its call and no call from the
    reasoning item before it; never on a summary."""
    n = len(entries)
    t = max(0, n - keep)
    while t < n and entries[t].index is None:
        t += 1
    moved = True
    while moved:
        moved = False
        calls: dict[str, int] = {}
        for j in range(t):
            item = entries[j].item
            if item.get("type") in CALL_OUTPUTS and isinstance(item.get("call_id"), str):
                calls[item["call_id"]] = j
        for j in range(t, n):
            item = entries[j].item
            call_id = item.get("call_id")
            at = calls.get(call_id) if item.get("type") in _OUTPUT_CALLS and call_id else None
            if at is not None and at < t:
                t, moved = at, True
        if t > 0 and entries[t - 1].item.get("type") == "reasoning":
            t, moved = t - 1, True
    return t


def _floor_start(state: SessionState, tail_start: int) -> int:
    """The start of the recovery floor before ``tail_start``, on a turn boundary."""
    cfg = state.config
    if cfg is None or cfg.floor_unit != cfg.truncator_unit:
        return tail_start  # C1 refuses such a session's compactions anyway
    start = max(0, tail_start - cfg.floor_span)
    if state.unit == "turns":
        return start
    return state.tok_starts[bisect.bisect_right(state.tok_starts, start) - 1]
