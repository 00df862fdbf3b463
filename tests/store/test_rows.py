"""The port's values: session ids it stores, and pickles of its values made before."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pytest

import eventstore
from eventstore import Head, SessionSummary

# pickle.dumps(..., protocol=4) of these values by tierlog 0.2 (commit 1308fd6): a
# value that moves to another module must still load from them.
HEAD_PICKLE = (
    b"\x80\x04\x95m\x00\x00\x00\x00\x00\x00\x00\x8c\x17eventstore._store._rows\x94\x8c\x04Head"
    b"\x94\x93\x94K\x02\x8c@" + b"ab" * 32 + b"\x94\x86\x94\x81\x94."
)
SUMMARY_PICKLE = (
    b"\x80\x04\x95\x8d\x00\x00\x00\x00\x00\x00\x00\x8c\x17eventstore._store._rows\x94\x8c\x0e"
    b"SessionSummary\x94\x93\x94)\x81\x94}\x94(\x8c\nsession_id\x94\x8c\x01s\x94\x8c\x06events"
    b"\x94K\x02\x8c\x05turns\x94K\x01\x8c\x08refusals\x94K\x00\x8c\rinvalidations\x94K\x00\x8c\r"
    b"raw_fallbacks\x94K\x00ub."
)


class TestPickles:
    def test_pickles_made_by_0_2_load(self) -> None:
        """A Head and a SessionSummary pickled by tierlog 0.2 load equal."""
        assert pickle.loads(HEAD_PICKLE) == Head(2, "ab" * 32)
        assert pickle.loads(SUMMARY_PICKLE) == SessionSummary(
            session_id="s", events=2, turns=1, refusals=0, invalidations=0, raw_fallbacks=0
        )

    def test_every_audit_row_loads_from_the_module_it_moved_from(self) -> None:
        """Each audit row class is found under ``_rows``, where 0.2 pickled it, and is
        the class the store's face gives; other names there are still unknown."""
        from eventstore import _store
        from eventstore._store import _rows

        for name in _rows._MOVED:
            assert getattr(_rows, name) is getattr(_store, name)
        with pytest.raises(AttributeError, match="no attribute 'Nope'"):
            _rows.Nope


class TestSessionIds:
    """The port refuses on append the session ids a journal cannot open again."""

    @pytest.mark.parametrize(
        "session_id", ["s", "mig-42", "a.b:c@d_e", "x" * 128, "", "-x", "x" * 129, "a b", "é", 5]
    )
    def test_the_port_and_the_journal_agree(self, session_id: object) -> None:
        """An id the port stores is one ``Journal.session`` opens, and the reverse."""
        from eventstore._journal import check_session_id as journal_rule
        from eventstore._store import check_session_id as port_rule

        def verdict(rule: Callable[[object], str]) -> bool:
            try:
                rule(session_id)
            except eventstore.InvalidEvent:
                return False
            return True

        assert verdict(port_rule) == verdict(journal_rule)

    def test_an_id_that_passed_is_remembered_and_the_rest_still_checked(self) -> None:
        """Ids that passed are matched once; a bad id after them, or a ``str`` subclass
        equal to a good one, is still checked (the subclass passes, uncached)."""
        from eventstore._store import _rows

        class Sneaky(str):
            pass

        assert _rows.check_session_id("mig-42") == "mig-42"
        assert "mig-42" in _rows._CHECKED
        with pytest.raises(eventstore.InvalidEvent):
            _rows.check_session_id("mig 42")
        assert _rows.check_session_id(Sneaky("sneaky-1")) == "sneaky-1"
        assert "sneaky-1" not in _rows._CHECKED
