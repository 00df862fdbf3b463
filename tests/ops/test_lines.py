"""Reading an export's lines: each session closed by its trailer, a line that does not
link a finding (not an error), the findings a trailer carries handed on."""

from __future__ import annotations

import json

import pytest

from eventstore._ops._lines import read_file
from reducers import Checkpointed, InvalidEvent

LINE = '{"session_id": "s", "version": %d, "type": "Checkpointed", "payload": {"at": 0}}'


def _end(events: int, **extra: object) -> str:
    return json.dumps({"end_of_session": "s", "events": events, "hash": None, **extra})


class TestTrailer:
    def test_a_closed_session_reads_whole(self) -> None:
        """Two lines and their trailer: two events, no finding, closed."""
        (session,) = read_file([LINE % 1, LINE % 2, _end(2)]).values()
        assert (session.events, session.findings, session.trailer) == (
            (Checkpointed(at=0), Checkpointed(at=0)), (), True,
        )  # fmt: skip

    def test_without_its_trailer_a_session_is_refused_unless_asked(self) -> None:
        """No trailer: InvalidEvent naming the last line; read anyway when not required."""
        with pytest.raises(InvalidEvent, match=r"no trailer after its last line \(line 2\)"):
            read_file([LINE % 1, LINE % 2])
        (session,) = read_file([LINE % 1, LINE % 2], require_trailer=False).values()
        assert (len(session.events), session.trailer) == (2, False)

    @pytest.mark.parametrize(
        ("lines", "message"),
        [
            ([LINE % 1, _end(1), LINE % 2], "line 3: session 's' goes on after its trailer"),
            ([_end(0)], "line 1: a trailer for session 's', which has no lines before it"),
            ([LINE % 1, _end(1), _end(1)], "line 3: a trailer for session 's'"),
            ([LINE % 1, _end(1, findings="x")], "a trailer's findings are a list of texts"),
            ([LINE % 1, _end(1, extra=1)], "a trailer has"),
        ],
    )
    def test_a_misplaced_or_malformed_trailer_is_refused(
        self, lines: list[str], message: str
    ) -> None:
        """Lines after a trailer, a trailer without lines or twice, odd fields: refused."""
        with pytest.raises(InvalidEvent, match=message):
            read_file(lines)

    def test_the_findings_a_trailer_carries_are_handed_on(self) -> None:
        """An export made with --allow-findings: its findings come back, marked as carried."""
        (session,) = read_file([LINE % 1, _end(1, findings=["replay v1: x"])]).values()
        assert session.findings == ("the export carried: replay v1: x",)


class TestLinks:
    def test_a_line_that_does_not_link_is_a_finding(self) -> None:
        """An exported line edited behind the chain's back reads, with a finding that
        names its line and version."""
        row = json.loads(LINE % 1) | {"recorded_at": "t", "hash": "0" * 64}
        (session,) = read_file([json.dumps(row), json.dumps(
            {"end_of_session": "s", "events": 1, "hash": "0" * 64}
        )]).values()  # fmt: skip
        (finding,) = session.findings
        assert finding.startswith("chain: line 1 (v1): its hash does not match")
