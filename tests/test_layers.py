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


RECORDERS = {
    "_sqlite",
    "_sqlite_guard",
    "_schema",
    "_postgres",
    "_pg_schema",
    "_pg_wire",
}  # behind the port
CONNECTION = {"conn", "execute", "executemany", "executescript", "cursor"}


def _graph() -> dict[str, set[str]]:
    """Each eventstore module and the eventstore modules it imports (TYPE_CHECKING too)."""
    graph: dict[str, set[str]] = {}
    for path in (ROOT / "eventstore").glob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "eventstore":
                deps |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("eventstore."):
                deps.add(node.module.split(".")[1])  # type: ignore[union-attr]
        graph[path.stem] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle in ``graph``, or an empty list."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return []
        for dep in sorted(graph.get(node, ())):
            if found := visit(dep, [*path, node]):
                return found
        done.add(node)
        return []

    for start in sorted(graph):
        if found := visit(start, []):
            return found
    return []


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

    def test_no_import_cycles_inside_eventstore(self) -> None:
        """No eventstore module imports, even for type checking, one that imports it back."""
        assert _cycle(_graph()) == []

    def test_the_cycle_finder_finds_cycles(self) -> None:
        """The check above can fail: a two-module loop is reported."""
        assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]

    def test_only_recorders_speak_sql(self) -> None:
        """Only the modules behind the Recorder port import a driver or run a statement."""
        drivers = {"sqlite3", "sqlite_utils", "psycopg"}
        for path in (ROOT / "eventstore").glob("*.py"):
            if path.stem in RECORDERS:
                continue
            tree = ast.parse(path.read_text())
            imported = {
                alias.name.split(".")[0]
                for node in ast.walk(tree)
                if isinstance(node, ast.Import)
                for alias in node.names
            } | {
                node.module.split(".")[0]
                for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module
            }
            assert imported & drivers == set(), path.name
            executes = {
                node.attr
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and node.attr in CONNECTION
            }
            assert executes == set(), path.name

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
