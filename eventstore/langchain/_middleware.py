"""``TierlogSummarizationMiddleware``: LangChain's ``SummarizationMiddleware`` with the gate.

It decides when and what to summarize exactly as the stock middleware does (it calls
the same helpers), and adds three things. Every message the agent sees is journaled as
a turn (``_messages``), before and after each model call. The summarizer is told the
live obligations of everything it is about to delete, whatever
``trim_tokens_to_summarize`` hides from it (``_obligations.hints``). And the summary
is proposed to the journal as a compaction with the marker gate on: one that still
drops an obligation is refused (``CompactionRefused``) and handled per ``on_unsafe``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Sequence
from typing import Any, Literal, TypeAlias

import attrs
from langchain.agents.middleware import SummarizationMiddleware
from langchain.agents.middleware.summarization import _check_summary, _summary_config
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AnyMessage, RemoveMessage, SystemMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from eventstore._journal import Journal
from eventstore._ops import carried_by
from eventstore._session import Session
from eventstore.langchain import _obligations as ob
from eventstore.langchain._messages import Calls, entry, is_summary
from invariants import MarkerInvalid, UnrecoverableCompactionError
from reducers import Event, SessionConfig, TurnAppended

OnUnsafe: TypeAlias = Literal["resummarize", "keep", "retell"]
ON_UNSAFE: tuple[OnUnsafe, ...] = ("resummarize", "keep", "retell")
Update: TypeAlias = dict[str, Any] | None
# the gate asks for a summary with these hints and is sent it back
Gate: TypeAlias = Generator[str, str, list[AnyMessage] | None]


@attrs.frozen(kw_only=True)
class _Plan:
    """A compaction of the messages before ``kept``, worked out before the summarizer runs."""

    version: int
    old: list[AnyMessage]
    kept: list[AnyMessage]
    tier: int
    input: tuple[int, int]
    covers: tuple[int, int]
    tail_start: int
    replaces: tuple[str, ...]
    due: ob.Owed


class TierlogSummarizationMiddleware(SummarizationMiddleware[Any, Any]):
    """A drop-in for ``SummarizationMiddleware`` that journals the conversation and
    refuses a summary that drops a rule, a failed or rejected call, or an open call.

    Takes ``SummarizationMiddleware``'s arguments, plus ``journal`` (an open
    ``eventstore.Journal``), ``session`` (its id: reopened if it exists, else started
    with ``config``, by default one in turns sized from the trigger) and ``on_unsafe``:
    ``"resummarize"`` asks the summarizer once more with what it dropped, then appends
    the re-tell block; ``"keep"`` keeps the history unsummarized; ``"retell"`` appends
    the re-tell block to the summary message at once. One instance journals one
    conversation.
    """

    def __init__(
        self,
        model: Any,
        *,
        journal: Journal,
        session: str,
        on_unsafe: OnUnsafe = "resummarize",
        config: SessionConfig | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model, **kwargs)
        if on_unsafe not in ON_UNSAFE:
            raise ValueError(f"on_unsafe must be one of {ON_UNSAFE}, got {on_unsafe!r}")
        self.on_unsafe: OnUnsafe = on_unsafe
        self.session: Session = (
            journal.session(session)
            if journal.has_session(session)
            else journal.start_session(session, config or self._default_config())
        )
        self._turns: dict[str, int] = {}  # message id -> turn index
        self._nodes: dict[str, str] = {}  # summary message id -> node id
        self._names: dict[str, str] = {}  # tool call id -> its call's name, every call seen

    def _default_config(self) -> SessionConfig:
        window = self._get_profile_limits() or 128_000
        trigger = next((int(c["tokens"]) for c in self._trigger_clauses if "tokens" in c), None)
        return SessionConfig(
            window_tokens=max(window, trigger or 0),
            trigger_tokens=trigger or window * 4 // 5,
            truncator_unit="turns",
            floor_span=0,  # LangChain's trimming decides what the summarizer reads
            floor_unit="turns",
            on_unsafe="halt",  # the agent's state still holds the history
        )

    # -- LangChain's hooks ------------------------------------------------------------------
    def before_model(self, state: Any, runtime: Runtime[Any]) -> Update:
        """Journal what is new; summarize as the stock middleware would, through the gate."""
        plan = self._prepare(state["messages"])
        if plan is None:
            return None
        gate = self._gate(plan)
        try:
            hints = next(gate)
            while True:
                hints = gate.send(self._summarize(plan.old, hints))
        except StopIteration as done:
            return self._update(done.value, plan)

    async def abefore_model(self, state: Any, runtime: Runtime[Any]) -> Update:
        """As :meth:`before_model`, with the summarizer awaited."""
        plan = self._prepare(state["messages"])
        if plan is None:
            return None
        gate = self._gate(plan)
        try:
            hints = next(gate)
            while True:
                hints = gate.send(await self._asummarize(plan.old, hints))
        except StopIteration as done:
            return self._update(done.value, plan)

    def after_model(self, state: Any, runtime: Runtime[Any]) -> Update:
        """Journal the model's answer (its tool calls open now)."""
        self._journal(state["messages"])
        return None

    async def aafter_model(self, state: Any, runtime: Runtime[Any]) -> Update:
        """As :meth:`after_model`."""
        self._journal(state["messages"])
        return None

    # -- journaling ---------------------------------------------------------------------------
    def _journal(self, messages: Sequence[AnyMessage]) -> None:
        """Append the messages not journaled yet as turns, in one transaction."""
        self._ensure_message_ids(list(messages))
        state = self.session.state
        self._names.update((c.call_id, c.name) for c in state.open_calls.values())
        calls = Calls(journaled=state.call_ids, open=set(state.open_calls), names=self._names)
        events: list[Event] = []
        new: dict[str, int] = {}
        for m in messages:
            if m.id is None or m.id in self._turns or m.id in new or is_summary(m):
                continue
            e = entry(m, calls.names)
            new[m.id] = index = state.turns + len(new)
            tokens = max(1, self._partial_token_counter([m]))
            events += [TurnAppended(index=index, role=e.role, content=e.content, tokens=tokens)]
            events += calls.admit(e.raised)
        if events:
            self.session.extend(events)
            self._turns.update(new)

    # -- the gate ------------------------------------------------------------------------------
    def _prepare(self, messages: list[AnyMessage]) -> _Plan | None:
        """Journal ``messages``; the compaction the stock middleware would make now, if any."""
        self._journal(messages)
        if not self._should_summarize(messages, self.token_counter(messages)):
            return None
        cutoff = self._determine_cutoff_index(messages)
        if cutoff <= 0:
            return None
        old, kept = self._partition_messages(messages, cutoff)
        return self._plan(old, kept)

    def _plan(self, old: list[AnyMessage], kept: list[AnyMessage]) -> _Plan | None:
        state = self.session.state
        raw = [self._turns[m.id] for m in old if m.id in self._turns]
        if not raw:
            return None  # nothing journaled to fold (a summary alone, or not ours)
        tail_start = next((self._turns[m.id] for m in kept if m.id in self._turns), state.end)
        replaced = [n for n in state.live_nodes if n.covers_hi <= tail_start]
        seen = [
            self._turns[m.id] for m in self._trim_messages_for_summary(old) if m.id in self._turns
        ]
        return _Plan(
            version=state.version,
            old=old,
            kept=kept,
            tier=2 if replaced else 1,
            input=(min(seen, default=tail_start), tail_start),
            covers=(min([raw[0], *(n.covers_lo for n in replaced)]), tail_start),
            tail_start=tail_start,
            replaces=tuple(n.node_id for n in replaced),
            due=ob.owed(state, tail_start),
        )

    def _gate(self, plan: _Plan) -> Gate:
        """Ask for a summary told what it must carry; commit it, or handle the refusal."""
        summary = yield ob.hints(plan.due)
        try:
            return self._commit(plan, summary)
        except UnrecoverableCompactionError as refused:
            if self.on_unsafe == "keep":
                return None
            if self.on_unsafe == "retell":
                return self._retell(plan, summary)
            summary = yield ob.violations_hint(plan.due, refused.violations)
        try:  # told what it dropped; if it drops it still, the re-tell block
            return self._commit(plan, summary)
        except UnrecoverableCompactionError:
            return self._retell(plan, summary)

    def _retell(self, plan: _Plan, summary: str) -> list[AnyMessage] | None:
        """Commit ``summary`` with the re-tell block of what it drops; keep the history
        when even that is refused (a compaction the journal cannot take: recorded)."""
        dropped = ob.not_carried(plan.due, carried_by(self.session.state, summary))
        try:
            return self._commit(plan, f"{summary}\n\n{ob.retell_block(dropped)}")
        except UnrecoverableCompactionError:
            return None

    def _commit(self, plan: _Plan, summary: str) -> list[AnyMessage]:
        """Propose ``summary`` with what it evidences; its message, once committed."""
        state = self.session.state
        carried = carried_by(state, summary)
        messages: list[AnyMessage] = list(self._build_new_messages(summary))
        node = self.session.compact(
            tier=plan.tier,
            input=plan.input,
            covers=plan.covers,
            tail_start=plan.tail_start,
            summary=summary,
            tokens=max(1, self._partial_token_counter(messages)),
            dispositions=carried.dispositions,
            unresolved_ids=carried.calls,
            constraints=carried.constraints,
            replaces=plan.replaces,
            expected_version=state.version,
            require_marker=True,
        )
        with contextlib.suppress(MarkerInvalid):  # recorded as MarkerRefused; it stands
            self.session.emit_marker(node.node_id)
        self._ensure_message_ids(messages)
        self._nodes.update((m.id, node.node_id) for m in messages if m.id is not None)
        return messages

    def _update(self, summary: list[AnyMessage] | None, plan: _Plan) -> Update:
        if summary is None:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *summary, *plan.kept]}

    # -- the summarizer, told what it must carry ----------------------------------------------
    def _summarize(self, old: list[AnyMessage], hints: str) -> str:
        """The stock ``_create_summary`` with ``hints`` handed to the summarizer."""
        if not hints:
            return self._create_summary(old)
        trimmed = self._trim_messages_for_summary(old)  # may be empty: hints alone
        if self.summarizer is not None:
            told = [SystemMessage(content=hints), *trimmed]
            return _check_summary(self.summarizer.invoke(told, config=_summary_config()))
        try:
            prompt = _hinted(self._format_summary_prompt(trimmed), hints)
            response = self._summary_model.invoke(prompt, config=_summary_config())
        except ContextOverflowError:
            retry = self._overflow_retry_prompt(trimmed)
            if retry is None:
                raise
            response = self._summary_model.invoke(_hinted(retry, hints), config=_summary_config())
        return response.text.strip()

    async def _asummarize(self, old: list[AnyMessage], hints: str) -> str:
        """As :meth:`_summarize`, awaited."""
        if not hints:
            return await self._acreate_summary(old)
        trimmed = self._trim_messages_for_summary(old)  # may be empty: hints alone
        if self.summarizer is not None:
            told = [SystemMessage(content=hints), *trimmed]
            summary = await self.summarizer.ainvoke(told, config=_summary_config())
            return _check_summary(summary)
        try:
            prompt = _hinted(self._format_summary_prompt(trimmed), hints)
            response = await self._summary_model.ainvoke(prompt, config=_summary_config())
        except ContextOverflowError:
            retry = self._overflow_retry_prompt(trimmed)
            if retry is None:
                raise
            hinted = _hinted(retry, hints)
            response = await self._summary_model.ainvoke(hinted, config=_summary_config())
        return response.text.strip()


def _hinted(prompt: str, hints: str) -> str:
    """``hints`` before the prompt's ``<messages>`` marker (LangChain's documented splice
    point), or after the prompt when a custom one has none."""
    marker = "<messages>"
    if marker in prompt:
        return prompt.replace(marker, f"{hints}\n\n{marker}", 1)
    return f"{prompt}\n\n{hints}"
