"""The journal side of a ``TierlogSession``: the SDK's item operations on one ``Session``.

``ItemJournal`` reads the view back as items, commits the events planned for new
items, retracts the latest item, clears the context, and plans and commits a
compaction, each one a read of the session's state followed by one commit at that
state's version (retried on a ``ConcurrencyError`` where re-planning is right,
dropped where the plan is stale). The planning itself is pure and lives in the other
``_agents_*`` modules; this is where it meets the journal. It must run on the
journal's thread (``_agents_thread``); it knows nothing of the SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final, TypeVar

import structlog

from eventstore._errors import ConcurrencyError
from eventstore._journal import Journal
from eventstore._session import Session
from eventstore._values import Turn
from eventstore.openai_agents._compaction import Plan, plan_compaction, summary_tokens
from eventstore.openai_agents._items import Item, decode, plan_items, summary_item
from eventstore.openai_agents._summary import Summary, check_claims
from eventstore.openai_agents._view import Entry, TurnTexts, budget_gone, entries, view
from reducers import Event, InvalidEvent, JournalError, Node, SessionConfig, SessionState

_RETRIES: Final = 3
T = TypeVar("T")


def open_session(journal: Journal, session_id: str, config: SessionConfig) -> Session:
    """The journal session ``session_id``, started with ``config`` if it is new."""
    if journal.has_session(session_id):
        return journal.session(session_id)
    try:
        return journal.start_session(session_id, config)
    except InvalidEvent:  # another process started it in between
        return journal.session(session_id)


class ItemJournal:
    """A journal ``Session`` seen as the SDK's list of items; ``log`` for what it drops."""

    def __init__(self, session: Session, log: structlog.stdlib.BoundLogger) -> None:
        self.session = session
        self._log = log

    def entries(self, limit: int | None) -> list[Entry]:
        """The view now: live summaries and resident items, the latest ``limit`` of them."""
        state = self.session.state
        return entries(state, limit, self._reader(state))

    def append(
        self, items: list[Item], texts: list[str], tokens: Callable[[SessionState], list[int]]
    ) -> None:
        """Append ``items`` (``texts``, their JSON) as turns, their calls opened and
        resolved, each counting ``tokens(state)``; in one transaction."""

        def plan(state: SessionState) -> list[Event]:
            counts = tokens(state)
            away = budget_gone(state)
            return plan_items(state, items, texts, counts, away=away, turn_at=self._turn_at)

        self._again(lambda state: self.session.extend(plan(state), expected_version=state.version))

    def _again(self, step: Callable[[SessionState], T]) -> T:
        """``step(state)`` on the session's state, which commits at that state's version;
        run again on a fresh state (up to three times) if another process wrote first."""
        for attempt in range(_RETRIES):
            try:
                return step(self.session.state)
            except ConcurrencyError:
                if attempt == _RETRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _turn_at(self, index: int) -> Turn:
        """The turn ``index``, truncated or not."""
        (held,) = self.session.turns(index, index + 1)
        return held

    def pop(self) -> Item | None:
        """Retract the latest item (or clear a summary that is the only one); return it."""
        return self._again(self._pop)

    def _pop(self, state: SessionState) -> Item | None:
        slots = view(state)
        if not slots:
            return None
        last = slots[-1]
        if last.node is None:
            (turn,) = self._texts(state, last.hi - 1, last.hi)
            self.session.retract_turn(last.hi - 1, "pop_item", expected_version=state.version)
            return decode(turn[1], turn[2])
        if len(slots) > 1:
            raise JournalError(
                f"pop_item: the latest item is summary {last.node.node_id} with items"
                " before it; clear_session takes them all"
            )
        self.session.clear_context(
            "pop_item took the summary, the only item", expected_version=state.version
        )
        return summary_item(last.node.summary)

    def clear(self) -> None:
        """Take every item out of the context, unless there is none."""
        self._again(self._clear)

    def _clear(self, state: SessionState) -> None:
        if view(state):
            self.session.clear_context("clear_session", expected_version=state.version)

    def plan_compaction(self, session_id: str, keep_items: int, force: bool) -> Plan | None:
        """The compaction due now retaining ``keep_items``, or ``None``."""
        state = self.session.state
        return plan_compaction(
            state,
            session_id=session_id,
            keep_items=keep_items,
            force=force,
            texts=self._reader(state),
        )

    def commit_compaction(self, plan: Plan, summary: Summary) -> Node | None:
        """Propose ``summary`` for ``plan`` through the marker gate at the planned version;
        ``None`` if the session moved meanwhile."""
        check_claims(self.session.state, summary)
        tokens = summary_tokens(summary)
        try:
            return self.session.compact(
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

    def _reader(self, state: SessionState) -> TurnTexts:
        """Reads ``(index, role, content)`` of ``state``'s turns ``[lo, hi)``."""
        return lambda lo, hi: self._texts(state, lo, hi)

    def _texts(self, state: SessionState, lo: int, hi: int) -> Iterator[tuple[int, str, str]]:
        """``(index, role, content)`` of the turns ``lo <= index < hi``."""
        if lo >= hi:
            return iter(())
        turns = self.session.effects.turns(state, [(lo, hi)])
        return ((t["index"], t["role"], t["content"]) for t in turns)
