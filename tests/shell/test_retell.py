"""``Session.owed`` and ``Session.retell`` on real journal files: one ``system`` turn and
its ``Retold``, re-derived by verify and import, and the sha256 of every state kept
through a move, an export and an import."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eventstore
import reducers as r
from eventstore import Session
from eventstore._ops._audit import audit, verify
from eventstore._ops._transfer import export_lines, import_file
from eventstore._retell import HEADER
from tests.helpers import config, fill, run_step


def story(journal: eventstore.Journal, sid: str = "mig-42", **changes: object) -> Session:
    """The README's story up to the truncation: a constraint and a call evicted."""
    s = journal.start_session(sid, config(**changes))
    s.append_turn("user", "Add tenant_id to orders. Never modify files under /etc.", 40)
    s.state_constraint("no-etc", "never modify files under /etc")
    s.open_call("call-1", "tool_call", "grep -rn tenant_id migrations/")
    s.append_turn("assistant", "Plan A: add-column-then-backfill.", 20)
    s.dispose("backfill", "rejected", "it locks orders")
    fill(s, 4, tokens=900)
    s.truncate(0, 2, "budget")
    return s


@pytest.fixture(name="journal")
def _journal(tmp_path: Path) -> eventstore.Journal:
    return eventstore.open(tmp_path / "agent.db")


class TestRetell:
    def test_one_system_turn_states_every_owed_obligation(
        self, journal: eventstore.Journal
    ) -> None:
        """One system turn, one line each (status and a quote), and owed() is empty after."""
        s = story(journal)
        assert [o.key for o in s.owed()] == ["no-etc", "backfill", "call-1"]
        before = s.state.version
        told = s.retell()
        assert told is not None
        assert (told.role, told.index, told.still_owed) == ("system", 6, ())
        assert [o.key for o in told.told] == ["no-etc", "backfill", "call-1"]
        lines = told.content.splitlines()
        assert lines[0] == HEADER
        assert lines[1].startswith("- constraint no-etc (pending): never modify files under /etc")
        assert '"Add tenant_id to orders. Never modify files under /etc."' in lines[1]
        assert lines[2].startswith("- approach backfill was rejected: it locks orders")
        assert lines[3].startswith("- call call-1 is still open (tool_call, no result yet)")
        events = list(s.events(start=before + 1))
        assert [type(e).__name__ for e in events] == ["TurnAppended", "Retold"]
        assert s.owed() == ()
        assert verify(journal) == []

    def test_max_chars_cuts_and_the_rest_stays_owed(self, journal: eventstore.Journal) -> None:
        """What does not fit stays owed, the result and the Retold event say so."""
        s = story(journal)
        full = s.retell(dry_run=True)
        assert full is not None
        limit = len("\n".join(full.content.splitlines()[:2]))
        told = s.retell(max_chars=limit)
        assert told is not None
        assert len(told.content) <= limit
        assert [o.key for o in told.told] == ["no-etc"]
        assert [o.key for o in told.still_owed] == ["backfill", "call-1"]
        assert [o.key for o in s.owed()] == ["backfill", "call-1"]
        retold = list(s.events())[-1]
        assert isinstance(retold, r.Retold)
        assert (retold.max_chars, retold.cut) == (limit, 2)
        assert verify(journal) == []

    def test_a_limit_too_small_for_one_line_writes_nothing(
        self, journal: eventstore.Journal
    ) -> None:
        """InvalidArgument, and the session is as it was."""
        s = story(journal)
        version = s.state.version
        with pytest.raises(eventstore.InvalidArgument, match="cannot hold the first owed"):
            s.retell(max_chars=40)
        assert s.state.version == version

    def test_a_first_line_longer_than_the_limit_is_cut_to_it(
        self, journal: eventstore.Journal
    ) -> None:
        """A rule pasted as one long paragraph is told cut to the limit, not refused, and a
        replay (verify) derives the same cut block."""
        s = journal.start_session("long", config())
        rule = "never touch the billing tables " + "because of the audit " * 300
        s.append_turn("user", rule, 40)
        s.state_constraint("billing", rule)
        fill(s, 4, tokens=900)
        s.truncate(0, 1, "budget")
        told = s.retell(max_chars=400)
        assert told is not None
        assert len(told.content) <= 400
        lines = told.content.splitlines()
        assert lines[1].startswith("- constraint billing (pending): never touch the billing")
        assert lines[1].endswith("...")
        assert [o.key for o in told.told] == ["billing"]
        assert verify(journal) == []

    @pytest.mark.parametrize("bad", [-1, 1.5, "10", True])
    def test_bad_arguments_write_nothing(self, journal: eventstore.Journal, bad: object) -> None:
        """A max_chars that is not a count is an InvalidArgument, a token count an
        InvalidEvent (it is the turn's)."""
        s = story(journal)
        version = s.state.version
        with pytest.raises(eventstore.InvalidArgument):
            s.retell(max_chars=bad)  # type: ignore[arg-type]
        with pytest.raises(eventstore.InvalidEvent):
            s.retell(tokens=bad)  # type: ignore[arg-type]
        assert s.state.version == version

    def test_nothing_owed_appends_nothing(self, journal: eventstore.Journal) -> None:
        """With every obligation held, retell returns None and writes nothing."""
        s = journal.start_session("s", config())
        fill(s, 2)
        s.state_constraint("k", "rule")
        version = s.state.version
        assert s.retell() is None
        assert s.state.version == version

    def test_a_dry_run_writes_nothing(self, journal: eventstore.Journal) -> None:
        """dry_run hands back the turn that would be appended, and appends nothing."""
        s = story(journal)
        version = s.state.version
        preview = s.retell(dry_run=True)
        assert preview is not None
        assert s.state.version == version
        told = s.retell()
        assert told is not None
        assert told.content == preview.content

    def test_tokens_given_or_estimated(self, journal: eventstore.Journal) -> None:
        """The runtime's token count is used; without one, a byte estimate (4 per token)."""
        s = story(journal)
        estimated = s.retell(dry_run=True)
        assert estimated is not None
        assert estimated.tokens == (len(estimated.content.encode()) + 3) // 4
        told = s.retell(tokens=7)
        assert told is not None
        assert told.tokens == 7
        assert s.state.tokens_in(6, 7) == 7

    def test_the_next_compaction_carries_it(self, journal: eventstore.Journal) -> None:
        """The story: the re-tell gives it back, the next compaction must (C5) and does."""
        s = story(journal)
        s.retell()
        end = s.state.end
        with pytest.raises(eventstore.UnrecoverableCompactionError):
            s.compact(
                tier=1, input=(2, end), covers=(0, end), tail_start=end, summary="x", tokens=9
            )
        s.compact(
            tier=1,
            input=(2, end),
            covers=(0, end),
            tail_start=end,
            summary="never /etc; backfill rejected; grep running",
            tokens=9,
            constraints=["no-etc"],
            dispositions={"backfill": "rejected"},
            unresolved_ids=["call-1"],
        )
        assert s.owed() == ()
        assert verify(journal) == []

    def test_a_truncated_retell_is_owed_again(self, journal: eventstore.Journal) -> None:
        """Budget enforcement that evicts the re-tell turn owes its obligations again."""
        s = story(journal)
        told = s.retell()
        assert told is not None
        s.truncate(2, s.state.end, "budget")
        assert [o.key for o in s.owed()] == ["no-etc", "backfill", "call-1"]
        assert s.retell() is not None
        assert s.owed() == ()
        assert verify(journal) == []

    def test_a_marker_stays_valid_over_a_retell(self, journal: eventstore.Journal) -> None:
        """A valid marker's context holds a re-tell turn; truncating it invalidates the marker."""
        s = story(journal)
        end = s.state.end
        node = s.compact(
            tier=1,
            input=(2, end),
            covers=(0, end),
            tail_start=end,
            summary="s",
            tokens=9,
            constraints=["no-etc"],
            unresolved_ids=["call-1"],
            dispositions={"backfill": "rejected"},
        )
        s.state_constraint("no-usr", "never modify /usr")  # onto a folded turn: owed
        with pytest.raises(eventstore.MarkerInvalid):
            s.emit_marker(node.node_id)
        s.retell()
        marker = s.emit_marker(node.node_id)
        s.truncate(s.state.end - 1, s.state.end, "budget")
        assert not s.state.markers[marker.marker_id].valid
        assert verify(journal) == []


class TestAudit:
    def test_audit_names_the_retell_and_finds_nothing_lost(
        self, journal: eventstore.Journal
    ) -> None:
        """An evicted obligation no node carries is a finding until a re-tell states it."""
        s = story(journal)
        before = audit(journal).sessions[s.id]
        assert before.findings
        assert {o.retold_at for o in before.evicted_obligations} == {None}
        told = s.retell()
        assert told is not None
        after = audit(journal).sessions[s.id]
        assert {o.retold_at for o in after.evicted_obligations} == {told.index}
        assert not after.findings


class TestReplayAndTransfer:
    def test_import_re_derives_retells(self, journal: eventstore.Journal, tmp_path: Path) -> None:
        """An exported session with re-tells imports with nothing re-decided, same states."""
        s = story(journal)
        s.retell(max_chars=300)
        s.retell()
        lines = list(export_lines(journal, s.id))
        with eventstore.open(tmp_path / "copy.db") as copy:
            (imported,) = import_file(copy, lines, rename="copy")
            assert (imported.redecided, imported.skipped) == (0, ())
            assert copy.session("copy").state.sha256 == s.state.sha256
            assert verify(copy) == []

    def test_verify_finds_a_retell_the_rules_would_not_write(
        self, journal: eventstore.Journal
    ) -> None:
        """A re-tell turn that does not state what its Retold claims diverges on replay."""
        s = story(journal)
        index, version = s.state.turns, s.state.version
        forged: list[r.Event] = [
            r.TurnAppended(index=index, role="system", content="all is fine", tokens=3),
            r.Retold(index=index, calls=["call-1"]),
        ]
        journal.recorder.append(s.id, forged, expected_version=version)
        (finding,) = verify(journal)
        assert finding.version == version + 1
        assert "recorded TurnAppended differs from replay" in finding.problem


STEPS = st.lists(
    st.sampled_from(
        ["turn", "constraint", "restate", "call", "dispose", "truncate", "compact", "retell"]
    ),
    min_size=3,
    max_size=25,
)


class TestStatesKeepTheirHash:
    @settings(max_examples=15)
    @given(kinds=STEPS, seed=st.integers(0, 1_000))
    def test_move_export_and_import_keep_every_sha256(self, kinds: list[str], seed: int) -> None:
        """Every version's state hashes alike after a rename, and after an export/import."""
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            with eventstore.open(folder / "a.db") as journal:
                s = journal.start_session("s", config(on_unsafe="spill"))
                for i, kind in enumerate(kinds):
                    run_step(s, kind, _params(kind, seed + i))
                want = [s.state_at(v).sha256 for v in range(s.state.version + 1)]
                lines = list(export_lines(journal, "s"))
            shutil.move(folder / "a.db", folder / "moved.db")
            if (folder / "a.db.spills").exists():
                shutil.move(folder / "a.db.spills", folder / "moved.db.spills")
            with eventstore.open(folder / "moved.db") as moved:
                assert verify(moved) == []
                got = [moved.session("s").state_at(v).sha256 for v in range(len(want))]
                assert got == want
            with eventstore.open(folder / "c.db") as copy:
                (imported,) = import_file(copy, lines)
                assert imported.redecided == 0
                c = copy.session("s")
                assert [c.state_at(v).sha256 for v in range(len(want))] == want


def _params(kind: str, n: int) -> dict[str, object]:
    if kind in ("constraint", "restate"):
        return {"key": f"k{n % 2}", "a": n, "b": n // 2}
    if kind == "call":
        return {"call": f"c{n % 3}"}
    if kind == "dispose":
        return {"key": f"d{n % 2}", "disp": r.DISPOSITIONS[n % 3]}
    if kind == "compact":
        return {
            "a": n,
            "b": n * 7,
            "tail": n,
            "tier": 1 + n % 2,
            "carry": n % 3 != 0,
            "replace": n % 2 == 0,
            "exact_seam": True,
        }
    return {"a": n, "b": n * 3, "n": n, "tokens": 5, "role": "u"}
