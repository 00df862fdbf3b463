"""structlog is loaded when a line is logged, configured first by whoever asked to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> list[str]:
    """Standard output of ``code`` in a fresh interpreter, a line each."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


class TestLazyLogging:
    def test_configuration_waits_for_the_first_line(self) -> None:
        """``on_first_use`` runs its configuration once, when the first logger is bound,
        and not before: structlog is not loaded until then."""
        code = (
            "import sys, logging\n"
            "from eventstore._logging import bound, on_first_use\n"
            "on_first_use(lambda: print('configured'))\n"
            "print('structlog' in sys.modules)\n"
            "bound(logging.getLogger('tierlog'), a=1)\n"
            "bound(logging.getLogger('tierlog'), a=2)\n"
            "print('structlog' in sys.modules)\n"
        )
        assert _run(code) == ["False", "configured", "True"]

    def test_configuration_runs_at_once_when_structlog_is_loaded(self) -> None:
        """Asked for after structlog is loaded, the configuration runs right away."""
        code = (
            "import structlog\n"
            "from eventstore._logging import on_first_use\n"
            "on_first_use(lambda: print('configured'))\n"
            "print('after')\n"
        )
        assert _run(code) == ["configured", "after"]

    def test_commits_log_nothing_and_load_nothing(self, tmp_path: Path) -> None:
        """A session's plain commits leave structlog unloaded; its first refusal loads it
        and logs the refusal at WARNING, the session bound."""
        code = (
            "import sys, logging, eventstore\n"
            "from tests.helpers import fill, refuse, refusing_session\n"
            "logging.basicConfig(stream=sys.stdout, format='%(message)s')\n"
            f"s = refusing_session(eventstore.open({str(tmp_path / 'j.db')!r}), 'r')\n"
            "fill(s, 3)\n"
            "print('structlog' in sys.modules)\n"
            "refuse(s)\n"
        )
        out = _run(code)
        assert out[0] == "False"
        assert "refused" in out[1]
        assert "session_id=r" in out[1]

    def test_debug_logs_every_commit_and_an_invalidation_warns(self, tmp_path: Path) -> None:
        """At DEBUG each commit logs ``committed``; at WARNING a plain turn logs nothing
        and a truncation that breaks a marker logs ``marker_invalidated``."""
        code = (
            "import sys, logging, eventstore\n"
            "from tests.helpers import config\n"
            "logging.basicConfig(stream=sys.stdout, format='%(message)s')\n"
            "log = logging.getLogger('tierlog')\n"
            f"s = eventstore.open({str(tmp_path / 'j.db')!r}).start_session('d', config())\n"
            "for i in range(8):\n"
            "    s.append_turn('user', 'never modify /etc' if i == 7 else f'turn {i}', 10)\n"
            "s.state_constraint('no-etc', 'never modify /etc')\n"
            "node = s.compact(tier=1, input=(0, 5), covers=(0, 5), tail_start=5,"
            " summary='s', tokens=3)\n"
            "s.emit_marker(node.node_id)\n"
            "print('quiet')\n"
            "log.setLevel(logging.DEBUG)\n"
            "s.append_turn('user', 'one more', 10)\n"
            "log.setLevel(logging.WARNING)\n"
            "s.append_turn('user', 'and one more', 10)\n"
            "s.truncate(5, 9, 'budget')\n"
        )
        quiet, committed, invalidated, *rest = _run(code)
        assert quiet == "quiet"
        assert "committed" in committed
        assert "TurnAppended" in committed
        assert "marker_invalidated" in invalidated
        assert "session_id=d" in invalidated
        assert rest == []
