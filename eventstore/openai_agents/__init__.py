"""tierlog as the session store of the OpenAI Agents SDK (``pip install tierlog[openai-agents]``).

``TierlogSession`` implements the SDK's ``Session`` protocol (and its
``run_compaction`` hook) on one journal session; this module is its public face
and imperative shell. Every item the runner adds is one L0 turn holding the item's
exact JSON, so ``get_items`` returns what ``add_items`` was given (a tool call item
opens a call, its ``*_output`` resolves it); ``pop_item`` and ``clear_session``
append ``TurnRetracted`` / ``ContextCleared``, so the items leave ``get_items`` and
stay in the log; ``run_compaction`` hands a summarizer the items before a retained
tail plus every obligation the summary must carry, and proposes the result through
``Session.compact`` with the marker gate on: a summary that drops an open call, a
pending constraint or a negative fact is refused (recorded, the raw transcript
spilled) and the runner sees its items unchanged. Every journal call runs on the
journal's thread (``_agents_thread``), one consistent step each (``compact`` is two:
the plan, then, after the summarizer, a commit at the planned version, dropped if
another writer moved the session). The work is done by the private ``_agents_*``
modules: items as turns (``_items``), token counts (``_tokens``), the view
(``_view``), the summarizer's values (``_summary``), compaction planning
(``_compaction``) and the journal side (``_journal``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar, cast

import structlog

from eventstore._journal import Journal, check_session_id
from eventstore._session import Session
from eventstore.openai_agents._items import CALL_OUTPUTS as CALL_OUTPUTS
from eventstore.openai_agents._items import SUMMARY_ROLE as SUMMARY_ROLE
from eventstore.openai_agents._items import Item, encode
from eventstore.openai_agents._journal import ItemJournal, open_session
from eventstore.openai_agents._summary import Summarizer, SummarizerError, Summary, SummaryRequest
from eventstore.openai_agents._thread import JournalThread
from eventstore.openai_agents._tokens import UsageMeter
from invariants import UnrecoverableCompactionError
from reducers import InvalidArgument, InvalidEvent, Node, SessionConfig, SessionState

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
        self.keep_items = keep_items
        if config is not None and not isinstance(config, SessionConfig):
            raise InvalidEvent(f"config must be a SessionConfig, not {type(config).__name__}")
        self.session_id = session_id
        self.session_settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self.summarizer = summarizer
        self._log = structlog.wrap_logger(
            logging.getLogger("tierlog"), wrapper_class=structlog.stdlib.BoundLogger
        ).bind(session_id=session_id)
        self._usage = UsageMeter(self._log)
        self._thread = JournalThread(
            f"TierlogSession {session_id!r}",
            db,
            lambda journal: open_session(journal, session_id, config or DEFAULT_CONFIG),
        )
        self._journal, self._session = self._thread.journal, self._thread.session
        self._items = ItemJournal(self._session, self._log)
        self._on_unsafe = self._thread.do(lambda: _on_unsafe(self._session))

    @property
    def keep_items(self) -> int:
        """How many of the latest items a compaction retains verbatim (an integer >= 0);
        set to anything else, InvalidEvent and it keeps its value."""
        return self._keep_items

    @keep_items.setter
    def keep_items(self, keep_items: int) -> None:
        if type(keep_items) is not int or keep_items < 0:
            raise InvalidEvent(f"keep_items must be an integer >= 0, not {keep_items!r}")
        self._keep_items = keep_items

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
        if limit is not None and type(limit) is not int:  # what SQLiteSession takes
            raise InvalidArgument(f"limit must be None or an integer, not {limit!r}")
        n = resolve_session_limit(limit, self.session_settings)
        if n == 0:
            return []
        keep = n if n is not None and n > 0 else None  # SQLite's LIMIT -1 is no limit
        shown = await self._thread.ado(lambda: self._items.entries(keep))
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

        def tokens(state: SessionState) -> list[int]:
            return self._usage.tokens(state, data, texts, reported)

        await self._thread.ado(lambda: self._items.append(data, texts, tokens))

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        """Take the latest item out of the context (``TurnRetracted``) and return it.

        A summary that is the only item left goes with a ``ContextCleared``.
        """
        self._thread.check_open()
        item = await self._thread.ado(self._items.pop)
        return cast(TResponseInputItem | None, item)

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Take every item out of the context (``ContextCleared``); the log keeps them."""
        self._thread.check_open()
        await self._thread.ado(self._items.clear)

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
        plan = await self._thread.ado(
            lambda: self._items.plan_compaction(self.session_id, self.keep_items, force)
        )
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
        return await self._thread.ado(lambda: self._items.commit_compaction(plan, summary))

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


def _on_unsafe(session: Session) -> str:
    """The session's ``on_unsafe`` ("spill" or "halt"); it never changes."""
    config = session.state.config
    return config.on_unsafe if config is not None else DEFAULT_CONFIG.on_unsafe
