"""tierlog without the ``[fast]`` extra: orjson is optional, and every path that uses it
falls back to the standard library (pyproject: ``fast = ["orjson"]``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = """
import sys
sys.modules["orjson"] = None  # import orjson raises ImportError, as if not installed
import eventstore, reducers
from eventstore._ops import verify
from tests.helpers import TURNS

path = sys.argv[1]
with eventstore.open(path) as journal:
    s = journal.start_session("s", TURNS)
    s.extend([reducers.TurnAppended(index=i, role="tool", content=f"t{i}", tokens=1)
              for i in range(300)])
    s.open_call("back\\\\slash", "tool_call", "grep")
    for i in range(1_500):  # past a snapshot
        s.append_turn("tool", f"u{i}", 1)
with eventstore.open(path) as journal:
    s = journal.session("s")
    replayed = reducers.fold(s.events())
    print(s.state.version, s.state.sha256 == replayed.sha256, list(s.state.call_ids))
    print(verify(journal), "orjson" in sys.modules and sys.modules["orjson"] is not None)
"""


def test_write_snapshot_reopen_and_verify_without_orjson(tmp_path: Path) -> None:
    """A session written, snapshotted, reopened from its snapshot and verified with
    orjson unimportable: the same state as its replay, and no finding."""
    got = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "j.db")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == ["1802 True ['back\\\\slash']", "[] False"]
