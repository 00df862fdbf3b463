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

import inspect
import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar, cast

import structlog

from eventstore._agents_compaction import Plan, plan_compaction, summary_tokens
from eventstore._agents_items import CALL_OUTPUTS as CALL_OUTPUTS
from eventstore._agents_items import SUMMARY_ROLE as SUMMARY_ROLE
from eventstore._agents_items import Item, decode, encode, plan_items, summary_item
from eventstore._agents_summary import (
    Summarizer,
    SummarizerError,
    Summary,
    SummaryRequest,
    check_claims,
)
from eventstore._agents_thread import JournalThread
from eventstore._agents_tokens import UsageMeter
from eventstore._agents_view import Entry, TurnTexts, budget_gone, entries, view
from eventstore._errors import ConcurrencyError
from eventstore._journal import Journal, check_session_id
from eventstore._session import Session
from eventstore._values import Turn
from invariants import UnrecoverableCompactionError
from reducers import Event, InvalidEvent, JournalError, Node, SessionConfig, SessionState

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

DEFAULT_CONFIG: Final = SessionConfig(
    window_tokens=128_000,
    trigger_tokens=96_000,
    truncator_unit="turns",
    floor_span=2,
    floor_unit="turns",
    on_unsafe="spill",
)
"""The configuration of a session a ``TierlogSession`` starts without one."""

_RETRIES: Final = 3


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
        self._usage = UsageMeter(self._log)
        self._thread = JournalThread(
            f"TierlogSession {session_id!r}",
            db,
            lambda journal: _open_session(journal, session_id, config),
        )
        self._journal, self._session = self._thread.journal, self._thread.session
        self._on_unsafe = self._thread.do(lambda: _on_unsafe(self._session))

    def __repr__(self) -> str:
        return f"TierlogSession({self.session_id!r}, {self._journal.recorder.location!r})"

    # -- the SDK's Session protocol ------------------------------------------------------
    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        """The items the runner sees: live summaries, then the resident items, in order.

        ``limit`` (else ``session_settings.limit``) keeps the latest ``limit`` items.
        """
        self._thread.check_open()
        n = resolve_session_limit(limit, self.session_settings)
        if n == 0:
            return []
        keep = n if n is not None and n > 0 else None  # SQLite's LIMIT -1 is no limit
        shown = await self._thread.ado(lambda: self._entries(self._session.state, keep))
        return [cast(TResponseInputItem, e.item) for e in shown]

    async def add_items(
        self, items: list[TResponseInputItem], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        """Append each item as a turn holding its exact JSON, in one transaction.

        The items a model produced count the output tokens its usage reports when the
        runner passes it (at most the session's ``window_tokens``; a count that is not
        an integer >= 0 is ignored, with a warning); the others, and the model's items
        without a usable count, one token per four bytes of JSON.
        """
        self._thread.check_open()
        if not items:
            return
        texts = [encode(i, item) for i, item in enumerate(items)]
        data = cast(list[Item], items)
        reported = self._usage.reported(data, wrapper)

        def plan(state: SessionState) -> list[Event]:
            tokens = self._usage.tokens(state, data, texts, reported)
            away = budget_gone(state)
            return plan_items(state, data, texts, tokens, away=away, turn_at=self._turn_at)

        await self._thread.ado(lambda: self._retry(plan))

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        """Take the latest item out of the context (``TurnRetracted``) and return it.

        A summary that is the only item left goes with a ``ContextCleared``.
        """
        self._thread.check_open()
        item = await self._thread.ado(self._pop)
        return cast(TResponseInputItem | None, item)

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Take every item out of the context (``ContextCleared``); the log keeps them."""
        self._thread.check_open()
        await self._thread.ado(self._clear)

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
        self._thread.check_open()
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
        self._thread.check_open()
        summarizer = self.summarizer
        if summarizer is None:
            return None
        plan = await self._thread.ado(lambda: self._plan_compaction(force))
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
        return await self._thread.ado(lambda: self._commit_compaction(plan, summary))

    # -- what runtimes state through the session -------------------------------------------
    def state_constraint(self, key: str, text: str) -> None:
        """Record a user constraint the context must keep until it is lifted."""
        self._thread.do(lambda: self._session.state_constraint(key, text))

    def lift_constraint(self, key: str) -> None:
        """Lift a pending constraint."""
        self._thread.do(lambda: self._session.lift_constraint(key))

    def dispose(self, key: str, disposition: str, reason: str) -> None:
        """Record a negative fact: ``key`` was rejected, failed or superseded."""
        self._thread.do(lambda: self._session.dispose(key, disposition, reason))

    @property
    def state(self) -> SessionState:
        """The journal session's state (a frozen value)."""
        return self._thread.do(lambda: self._session.state)

    def run(self, fn: Callable[[Session], T]) -> T:
        """``fn(session)`` on the journal's thread: for the rest of the tierlog API
        (``emit_marker``, ``resume``, ``events``...)."""
        return self._thread.do(lambda: fn(self._session))

    def close(self) -> None:
        """Close the journal if this session opened it (idempotent).

        Called on the journal's own thread (from a ``run(fn)`` callback), it closes
        the journal right there and lets the thread end once the callback returns.
        """
        self._thread.close()

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
    def _turn_at(self, index: int) -> Turn:
        """The turn ``index``, truncated or not."""
        (held,) = self._session.turns(index, index + 1)
        return held

    def _entries(self, state: SessionState, limit: int | None) -> list[Entry]:
        """The view: live summaries and resident items, the latest ``limit`` of them."""
        return entries(state, limit, self._reader(state))

    def _reader(self, state: SessionState) -> TurnTexts:
        """Reads ``(index, role, content)`` of ``state``'s turns ``[lo, hi)``."""
        return lambda lo, hi: self._texts(state, lo, hi)

    def _texts(self, state: SessionState, lo: int, hi: int) -> Iterator[tuple[int, str, str]]:
        """``(index, role, content)`` of the turns ``lo <= index < hi``."""
        if lo >= hi:
            return iter(())
        turns = self._session.effects.turns(state, [(lo, hi)])
        return ((t["index"], t["role"], t["content"]) for t in turns)

    def _pop(self) -> Item | None:
        for attempt in range(_RETRIES):
            state = self._session.state
            slots = view(state)
            if not slots:
                return None
            last = slots[-1]
            try:
                if last.node is None:
                    (turn,) = self._texts(state, last.hi - 1, last.hi)
                    self._session.retract_turn(
                        last.hi - 1, "pop_item", expected_version=state.version
                    )
                    return decode(turn[1], turn[2])
                if len(slots) > 1:
                    raise JournalError(
                        f"pop_item: the latest item is summary {last.node.node_id} with items"
                        " before it; clear_session takes them all"
                    )
                self._session.clear_context(
                    "pop_item took the summary, the only item", expected_version=state.version
                )
                return summary_item(last.node.summary)
            except ConcurrencyError:
                if attempt == _RETRIES - 1:
                    raise
        return None  # pragma: no cover - the loop returns or raises

    def _clear(self) -> None:
        for attempt in range(_RETRIES):
            state = self._session.state
            if not view(state):
                return
            try:
                self._session.clear_context("clear_session", expected_version=state.version)
                return
            except ConcurrencyError:
                if attempt == _RETRIES - 1:
                    raise

    # -- compaction ------------------------------------------------------------------------
    def _plan_compaction(self, force: bool) -> Plan | None:
        state = self._session.state
        return plan_compaction(
            state,
            session_id=self.session_id,
            keep_items=self.keep_items,
            force=force,
            texts=self._reader(state),
        )

    def _commit_compaction(self, plan: Plan, summary: Summary) -> Node | None:
        check_claims(self._session.state, summary)
        tokens = summary_tokens(summary)
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


# -- opening the journal session -------------------------------------------------------
def _open_session(journal: Journal, session_id: str, config: SessionConfig | None) -> Session:
    """The journal session ``session_id``, started with ``config`` if it is new."""
    if journal.has_session(session_id):
        return journal.session(session_id)
    try:
        return journal.start_session(session_id, config or DEFAULT_CONFIG)
    except InvalidEvent:  # another process started it in between
        return journal.session(session_id)


def _on_unsafe(session: Session) -> str:
    """The session's ``on_unsafe`` ("spill" or "halt"); it never changes."""
    config = session.state.config
    return config.on_unsafe if config is not None else DEFAULT_CONFIG.on_unsafe
