"""The design card's layering: pure core, imperative shell, imports pointing down."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import eventstore

ROOT = Path(__file__).resolve().parent.parent
# What a pure layer may not touch: storage, files, processes, clocks, randomness, logging.
IMPURE = {
    "sqlite3",
    "sqlite_utils",
    "os",
    "io",
    "pathlib",
    "shutil",
    "subprocess",
    "socket",
    "time",
    "datetime",
    "random",
    "secrets",
    "uuid",
    "logging",
    "structlog",
    "tempfile",
}


def _imports(package: str) -> set[str]:
    found = set()
    for path in (ROOT / package).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found


class TestLayers:
    @pytest.mark.parametrize("package", ["reducers", "invariants"])
    def test_pure_layers_import_no_io(self, package: str) -> None:
        """reducers and invariants import nothing that does I/O, keeps time or draws chance."""
        assert _imports(package) & IMPURE == set()

    @pytest.mark.parametrize(
        ("package", "forbidden"),
        [("reducers", {"invariants", "eventstore"}), ("invariants", {"eventstore"})],
    )
    def test_imports_point_down(self, package: str, forbidden: set[str]) -> None:
        """reducers imports neither upper layer; invariants does not import the store."""
        assert _imports(package) & forbidden == set()

    @pytest.mark.parametrize("package", ["reducers", "invariants", "eventstore"])
    def test_each_package_imports_alone(self, package: str) -> None:
        """A fresh interpreter imports each package by itself, loading no upper layer."""
        code = (
            f"import sys, {package}; "
            "print(sorted(m for m in ('reducers', 'invariants', 'eventstore') if m in sys.modules))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        below = {"reducers": ["reducers"], "invariants": ["invariants", "reducers"]}
        assert ast.literal_eval(out) == below.get(package, ["eventstore", "invariants", "reducers"])

    def test_public_names_come_from_eventstore(self) -> None:
        """Every name the SPEC lists is importable from eventstore, and in __all__."""
        names = [
            "open",
            "Journal",
            "Session",
            "SessionConfig",
            "Turn",
            "Node",
            "Marker",
            "Context",
            "Spill",
            "SessionState",
            "Violation",
            "JournalError",
            "ConcurrencyError",
            "InvalidEvent",
            "UnrecoverableCompactionError",
            "MarkerInvalid",
            "IntegrityError",
        ]
        assert set(names) <= set(eventstore.__all__)
        assert all(getattr(eventstore, n) is not None for n in names)

    def test_errors_share_one_root(self) -> None:
        """Every tierlog error is a JournalError; the two refusals live in invariants."""
        import invariants

        for error in (
            eventstore.ConcurrencyError,
            eventstore.InvalidEvent,
            eventstore.IntegrityError,
            eventstore.UnrecoverableCompactionError,
            eventstore.MarkerInvalid,
        ):
            assert issubclass(error, eventstore.JournalError)
        assert eventstore.MarkerInvalid is invariants.MarkerInvalid
        assert eventstore.UnrecoverableCompactionError is invariants.UnrecoverableCompactionError
