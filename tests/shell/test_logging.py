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
