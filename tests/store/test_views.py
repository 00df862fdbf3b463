"""The audit views, read with plain SQL on both backends: one row per event of the view's
type, one column per payload field, each holding the event's own value."""

from __future__ import annotations

import json
from typing import Any

import pytest

import eventstore
from eventstore._store._codec import to_payload
from eventstore._store._views import VIEWS, Field
from reducers import Noted
from tests.helpers import TURNS
from tests.targets import Target, on_both
from tests.timelines import story_session

pytestmark = on_both


@pytest.fixture(name="payloads")
def _payloads(journal: eventstore.Journal) -> dict[int, tuple[str, Any]]:
    """The story session's events by version, a note such as an ingest records (the
    story is a live runtime's: it has none of its own), and a re-tell of what it owes."""
    s = story_session(journal)
    s.extend([Noted(kind="chain_fallback", text="joined by a guess", line=7, count=2)])
    assert s.retell(max_chars=2_000) is not None
    return {v: (type(e).__name__, json.loads(to_payload(e))) for v, e in enumerate(s.events(), 1)}


def _value(data: Any, field: Field) -> Any:
    key, path = field
    for step in path:
        data = data[step]
    return data[key]


def _plain(value: Any) -> Any:
    """A column's value as JSON data: arrays and objects come back as JSON text."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        return json.loads(value)
    return value


class TestViews:
    @pytest.mark.parametrize("name", sorted(VIEWS))
    def test_each_view_shows_its_events_field_for_field(
        self, target: Target, payloads: dict[int, tuple[str, Any]], name: str
    ) -> None:
        """Each event of the view's type is one row, in version order, its columns the
        payload's values (integers as integers, lists and objects as JSON)."""
        view = VIEWS[name]
        columns = list(view.columns)
        got = target.rows(
            f"SELECT version, {', '.join(columns)} FROM {name}"
            " WHERE session_id = 'story' ORDER BY version"
        )
        want = [
            (v, *(_value(data, view.columns[c]) for c in columns))
            for v, (type_name, data) in payloads.items()
            if type_name == view.type_name
        ]
        assert want, f"the story session has no {view.type_name}"
        assert [tuple(map(_plain, row)) for row in got] == want

    @pytest.mark.parametrize("name", ["compaction_refusals", "marker_refusals"])
    def test_a_refusal_names_its_rules_and_violations(
        self, target: Target, payloads: dict[int, tuple[str, Any]], name: str
    ) -> None:
        """``rules`` lists each violation's rule in order, ``violations`` holds them whole."""
        got = target.rows(f"SELECT version, rules, violations FROM {name} ORDER BY version")
        want = [
            (v, ",".join(x["rule"] for x in data["violations"]), data["violations"])
            for v, (type_name, data) in payloads.items()
            if type_name == VIEWS[name].type_name
        ]
        assert [(v, rules, _plain(found)) for v, rules, found in got] == want


class TestObligationsOutstanding:
    def test_outstanding_rows_are_what_the_state_holds(
        self, journal: eventstore.Journal, target: Target
    ) -> None:
        """``WHERE outstanding`` lists each key once, as the session holds it now: a
        restated constraint by its latest text, a lifted one not at all, a failed
        approach that later succeeded by its latest disposition, an open call until it
        comes back (0.2 listed every statement and every disposition)."""
        s = journal.start_session("owes", TURNS)
        s.append_turn("user", "never touch /etc", 5)
        s.state_constraint("etc", "never touch /etc")
        s.state_constraint("prod", "ask before deploying")
        s.dispose("git push (line 5)", "failed", "no upstream")
        s.open_call("c1", "tool_call", "grep")
        s.open_call("c2", "tool_call", "ls")
        s.append_turn("user", "never touch /etc or /usr", 7)
        s.state_constraint("etc", "never touch /etc or /usr")
        s.lift_constraint("prod")
        s.dispose("git push (line 5)", "superseded", "the same call succeeded")
        s.resolve_call("c2", "ok")
        got = target.rows(
            "SELECT kind, key, detail FROM obligations"
            " WHERE session_id = 'owes' AND outstanding ORDER BY version"
        )
        assert got == [
            ("open_call", "c1", "grep"),
            ("constraint", "etc", "never touch /etc or /usr"),
            ("negative_fact", "git push (line 5)", "superseded"),
        ]
        state = s.state
        assert {(k, c.text) for k, c in state.constraints.items()} == {
            ("etc", "never touch /etc or /usr")
        }
        assert {(k, f.disposition) for k, f in state.dispositions.items()} == {
            ("git push (line 5)", "superseded")
        }
        assert set(state.open_calls) == {"c1"}
