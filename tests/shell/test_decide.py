"""One ``decide`` for every path: the live session, ``verify`` and ``import`` agree."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import eventstore
import invariants
import reducers as r
from eventstore._commands import AppendTurn, Command, Record
from eventstore._decide import decide
from eventstore._decision import Decision, maker
from eventstore._ops._replay import commands, decide_again, divergences
from eventstore._ops._transfer import export_lines, import_file
from tests import strategies
from tests.helpers import config, run_step


def _states(events: list[r.Event]) -> list[str]:
    """The state sha256 after every version."""
    state, out = r.SessionState(), []
    for event in events:
        state = r.apply(state, event)
        out.append(state.sha256)
    return out


def _rederived(session: eventstore.Session) -> list[r.Event]:
    """What verify's replay decides for each recorded command, on the state before it."""
    recorded = list(session.events())
    state, out = r.fold(recorded[:1]), list(recorded[:1])
    for group in commands(recorded[1:]):
        derived = decide_again(state, group, session.effects).events
        out += derived
        state = r.fold(derived, state)
    return out


class TestEveryPathAgrees:
    @given(script=strategies.scripts(max_steps=30), unit=strategies.st.sampled_from(r.UNITS))
    def test_live_verify_and_import_make_the_same_events_and_states(
        self, script: list[strategies.Step], unit: str
    ) -> None:
        """For random scripts: same events (types and payloads) and the same sha256 at
        every version, live, re-derived by verify, and imported from the export."""
        with tempfile.TemporaryDirectory() as folder:
            live_db, copy_db = Path(folder) / "j.db", Path(folder) / "copy" / "j.db"
            copy_db.parent.mkdir()
            with eventstore.open(live_db, synchronous="normal") as journal:
                s = journal.start_session(
                    "p", config(truncator_unit=unit, floor_unit=unit, on_unsafe="spill")
                )
                for kind, params in script:
                    run_step(s, kind, params)
                live = list(s.events())
                rederived = _rederived(s)
                exported = io.StringIO("".join(line + "\n" for line in export_lines(journal, "p")))
            with eventstore.open(copy_db, synchronous="normal") as copy:
                import_file(copy, exported)
                imported = list(copy.session("p").events())
        assert rederived == live
        assert imported == live
        assert _states(imported) == _states(live)


class TestDecide:
    def test_a_decision_carries_its_result_and_state(self, journal: eventstore.Journal) -> None:
        """decide returns the events, the state after them and the command's result."""
        s = journal.start_session("d", config())
        decision = decide(AppendTurn(role="user", content="hi", tokens=4), s.state, s.effects)
        assert [type(e).__name__ for e in decision.events] == ["TurnAppended"]
        assert decision.state == r.fold(decision.events, s.state)
        assert (decision.result.index, decision.result.tokens) == (0, 4)
        assert s.state.version == 1  # deciding writes nothing

    def test_record_refuses_a_decision_event(self, journal: eventstore.Journal) -> None:
        """A compaction cannot be slipped in as a plain event."""
        s = journal.start_session("d", config())
        proposal = r.Compacted(
            node_id="n9", tier=1, input_lo=0, input_hi=0, covers_lo=0, covers_hi=1,
            tail_start=1, summary="", tokens=0,
        )  # fmt: skip
        with pytest.raises(eventstore.InvalidEvent, match="not a plain event"):
            decide(Record(event=proposal), s.state, s.effects)

    def test_an_unknown_command_is_invalid(self, journal: eventstore.Journal) -> None:
        """decide names what it does not know."""
        s = journal.start_session("d", config())

        class Nonsense(Command[None]):
            __slots__ = ()

        with pytest.raises(eventstore.InvalidEvent, match="not a tierlog command: Nonsense"):
            decide(Nonsense(), s.state, s.effects)


# Codes for runs of plain events, some of them invalid where they stand: the next turn,
# a skipped or repeated index, a token count that overflows the session, a call opened
# (maybe twice) or resolved (maybe unknown), a constraint stated or lifted (maybe not
# pending), an item disposed, a note (maybe of no item), an ingest position, and a
# second SessionStarted.
_CODES = (
    *("turn", "turn", "turn", "skip", "again", "huge", "open", "resolve"),
    *("state", "lift", "dispose", "note", "ingested", "start"),
)


def _run_of(codes: list[tuple[str, int]]) -> list[r.Event]:
    events: list[r.Event] = []
    turn = 0
    for code, n in codes:
        if code in ("turn", "skip", "again", "huge"):
            index = {"skip": turn + 1, "again": max(turn - 1, 0)}.get(code, turn)
            tokens = r.MAX_COUNT if code == "huge" else n
            events.append(r.TurnAppended(index=index, role="u", content="x", tokens=tokens))
            turn += 1
        elif code == "open":
            events.append(r.CallOpened(call_id=f"c{n % 3}", kind="tool_call", name="t"))
        elif code == "resolve":
            events.append(r.CallResolved(call_id=f"c{n % 3}", outcome="ok"))
        elif code in ("state", "lift", "dispose", "note", "ingested"):
            events.append(_keyed_event(code, n))
        else:
            events.append(r.SessionStarted(**attrs.asdict(config())))
    return events


def _keyed_event(code: str, n: int) -> r.Event:
    """An event of a type ``invariants.KEYED_RULES`` checks, about key ``n % 3``."""
    key = f"k{n % 3}"
    if code == "state":
        return r.ConstraintStated(key=key, text=f"rule {n}")
    if code == "lift":
        return r.ConstraintLifted(key=key)
    if code == "dispose":
        return r.ItemDisposed(key=key, disposition="rejected", reason="no")
    if code == "note":
        return r.Noted(kind="chain_fallback", text="guessed", count=n % 3)
    return r.Ingested(source="t.jsonl", offset=n, lines=n, sha256="0" * 64)


def _one_by_one(state: r.SessionState, events: list[r.Event]) -> tuple[r.SessionState, str, int]:
    """Validate and apply event by event: the state, and the first error and its version."""
    for event in events:
        try:
            invariants.validate(state, event)
        except r.InvalidEvent as exc:
            return state, str(exc), state.version + 1
        state = r.apply(state, event)
    return state, "", 0


_codes = st.lists(st.tuples(st.sampled_from(_CODES), st.integers(0, 50)), max_size=40)
# runs where the keyed events meet the same keys (0 or 1) again and again
_keyed_codes = st.lists(
    st.tuples(st.sampled_from(("turn", *_CODES[6:])), st.integers(0, 1)), max_size=40
)


@attrs.frozen
class _Converted:
    n: int = attrs.field(converter=int)


@attrs.frozen(cache_hash=True)
class _HashCached:
    n: int


@attrs.frozen(slots=False)
class _Unslotted:
    n: int


class TestMaker:
    def test_it_makes_what_the_class_makes(self) -> None:
        """The commit path's values made by ``maker`` equal and hash as ``cls(...)``'s,
        and stay frozen."""
        fields: dict[str, Any] = {"index": 3, "role": "user", "content": "hi", "tokens": 4}
        fields["tok_start"] = 9
        made, built = maker(eventstore.Turn)(**fields), eventstore.Turn(**fields)
        assert (made, hash(made), repr(made)) == (built, hash(built), repr(built))
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            made.index = 4  # type: ignore[misc]
        command = maker(AppendTurn)(role="user", content="hi", tokens=4)
        assert command == AppendTurn(role="user", content="hi", tokens=4)
        decision = maker(Decision)(events=(), state=r.SessionState(), result=None, error=None)
        assert decision == Decision(events=(), state=r.SessionState(), result=None)

    def test_every_field_is_named(self) -> None:
        """Fields go by keyword, every one of them: no default is filled in."""
        make = maker(Decision)
        with pytest.raises(TypeError):
            make((), r.SessionState(), None, None)
        with pytest.raises(TypeError):
            make(events=(), state=r.SessionState(), result=None)

    @pytest.mark.parametrize(
        "cls", [r.TurnAppended, _Converted, _HashCached, _Unslotted, r.SessionState]
    )
    def test_a_class_whose_init_checks_or_computes_is_refused(self, cls: type[Any]) -> None:
        """A validator, a converter, a cached hash, a missing slot or a field kept out
        of ``__init__`` would be skipped: ``maker`` refuses the class instead."""
        with pytest.raises(TypeError, match="does more than store its fields"):
            maker(cls)


class TestCheckedFold:
    @given(codes=_codes, started=st.booleans())
    def test_turn_check_agrees_with_validating_each_event(
        self, codes: list[tuple[str, int]], started: bool
    ) -> None:
        """A fold that checks turns by their count and token total (no state per turn)
        accepts and refuses exactly what validating event by event does, with the same
        message, and reaches the same state."""
        start = r.fold([r.SessionStarted(**attrs.asdict(config()))]) if started else None
        events = _run_of(codes)
        state, error, _ = _one_by_one(start or r.SessionState(), events)
        if error:
            with pytest.raises(r.InvalidEvent) as refused:
                r.fold(events, start, check=invariants.validate, turn_check=invariants.check_turn)
            assert str(refused.value) == error
            return
        folded = r.fold(events, start, check=invariants.validate, turn_check=invariants.check_turn)
        assert folded == state
        assert folded.sha256 == state.sha256

    @given(codes=_keyed_codes, started=st.booleans())
    @example(codes=[("open", 0), ("resolve", 0), ("open", 0)], started=True)
    @example(codes=[("state", 0), ("lift", 0), ("lift", 0)], started=True)
    def test_keyed_check_agrees_with_validating_each_event(
        self, codes: list[tuple[str, int]], started: bool
    ) -> None:
        """A fold that checks calls, constraints, items and notes from the keys they
        depend on (no state per event) accepts and refuses exactly what validating
        event by event does, with the same message, and reaches the same state."""
        start = r.fold([r.SessionStarted(**attrs.asdict(config()))]) if started else None
        events = _run_of(codes)
        state, error, _ = _one_by_one(start or r.SessionState(), events)
        checks: dict[str, Any] = {
            "check": invariants.validate,
            "turn_check": invariants.check_turn,
            "keyed_check": invariants.KEYED_RULES,
        }
        if error:
            with pytest.raises(r.InvalidEvent) as refused:
                r.fold(events, start, **checks)
            assert str(refused.value) == error
            return
        folded = r.fold(events, start, **checks)
        assert folded == state
        assert folded.sha256 == state.sha256

    @given(codes=_codes)
    def test_replay_names_the_first_invalid_event(self, codes: list[tuple[str, int]]) -> None:
        """verify's replay folds a run of plain events in one pass and still names the
        version of the first event that cannot follow the state before it."""
        started = r.SessionStarted(**attrs.asdict(config()))
        events = _run_of(codes)
        _, error, version = _one_by_one(r.fold([started]), events)
        found = list(divergences("p", [started, *events], _NoEffects()))
        assert [(d.version, d.problem) for d in found] == ([(version, error)] if error else [])

    @pytest.mark.parametrize("at", [1, 2, 1024, 1025, 1026, 1500, 2049, 3000])
    def test_a_snapshot_is_compared_at_its_own_version(self, at: int) -> None:
        """verify's replay compares a snapshot with the state at the snapshot's version,
        wherever it falls in a long run of plain events: the right digest passes, any
        other is named at that version."""
        started = r.SessionStarted(**attrs.asdict(config()))
        turns = (r.TurnAppended(index=i, role="u", content="x", tokens=1) for i in range(2999))
        events: list[r.Event] = [started, *turns]
        right = r.fold(events[:at]).sha256
        assert list(divergences("p", events, _NoEffects(), snapshot=(at, right))) == []
        found = list(divergences("p", events, _NoEffects(), snapshot=(at, "0" * 64)))
        assert [(d.check, d.version) for d in found] == [("snapshot", at)]


class _NoEffects:
    """Effects for a replay of plain events: none is ever asked for."""

    def spill_checker(self) -> Callable[[object], str | None]:
        return lambda _: None

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a replay of plain events used effects.{name}")
