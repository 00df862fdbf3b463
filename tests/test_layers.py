"""The design card's layering: pure core, imperative shell, imports pointing down."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from collections.abc import Iterator
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


BACKENDS = {"_sqlite", "_postgres"}  # behind the port: the only parts that speak SQL
INTEGRATIONS = {"claude_code", "openai_agents", "langchain", "codex"}
SHELL = "shell"  # eventstore's root modules
# What each part of eventstore may import (besides reducers, invariants and itself).
ALLOWED: dict[str, set[str]] = {
    SHELL: {"_store", *BACKENDS},
    "_store": {SHELL},
    "_sqlite": {SHELL, "_store"},
    "_postgres": {SHELL, "_store"},
    "_ops": {SHELL, "_store"},
    "_report": {SHELL, "_store", "_ops"},
    "testing": {SHELL, "_store"},
    **{name: {SHELL, "_ops"} for name in INTEGRATIONS},
    "cli": {SHELL, "_store", "_ops", "_report", *INTEGRATIONS},
}
# The shell modules that the parts below the shell may use: errors, locations, logging.
BELOW_SHELL = {"eventstore._errors", "eventstore._location", "eventstore._logging"}
CONNECTION = {"conn", "execute", "executemany", "executescript", "cursor"}


@functools.cache
def _modules(*folders: str) -> dict[str, Path]:
    """Every module below ``folders``, by dotted name."""
    found = {}
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(path: Path) -> Iterator[tuple[str, ast.stmt]]:
    """The modules ``path`` imports (TYPE_CHECKING too), with their statement: for
    ``from pkg import name``, ``pkg.name`` where that is a module, else ``pkg``."""
    modules = _modules("eventstore", "bench")
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                yield (name if name in modules else node.module), node


def _graph() -> dict[str, set[str]]:
    """Each module of eventstore and bench, and the modules of both that it imports."""
    modules = _modules("eventstore", "bench")
    return {
        name: {dep for dep, _ in _imported(path) if dep in modules and dep != name}
        for name, path in modules.items()
    }


def _part(module: str) -> str:
    """The part of eventstore a dotted module name belongs to."""
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and parts[1] not in ALLOWED):
        return SHELL
    return parts[1]


def _crossings() -> Iterator[tuple[str, str, ast.stmt]]:
    """``(module, imported, statement)`` for each import from one part of eventstore
    into another (the package's face and ``python -m eventstore`` aside)."""
    modules = _modules("eventstore")
    for name, path in modules.items():
        if name in ("eventstore", "eventstore.__main__"):
            continue
        for dep, node in _imported(path):
            if dep in modules and _part(dep) != _part(name):
                yield name, dep, node


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
        """A fresh interpreter imports each package by itself, loading no upper layer
        (eventstore loads nothing at all until a name of it is used)."""
        code = (
            f"import sys, {package}; "
            "print(sorted(m for m in ('reducers', 'invariants', 'eventstore') if m in sys.modules))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        below = {"reducers": ["reducers"], "invariants": ["invariants", "reducers"]}
        assert ast.literal_eval(out) == below.get(package, ["eventstore"])

    def test_no_import_cycles_in_eventstore_or_bench(self) -> None:
        """No module of eventstore or bench imports, even for type checking, one that
        imports it back."""
        assert _cycle(_graph()) == []

    def test_the_cycle_finder_finds_cycles(self) -> None:
        """The check above can fail: a two-module loop is reported."""
        assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]

    def test_only_backends_speak_sql(self) -> None:
        """Only the backends behind the Recorder port import a driver or run a statement."""
        drivers = {"sqlite3", "sqlite_utils", "psycopg"}
        for name, path in _modules("eventstore").items():
            if _part(name) in BACKENDS:
                continue
            imported = {dep.split(".")[0] for dep, _ in _imported(path)}
            assert imported & drivers == set(), name
            executes = {
                node.attr
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Attribute) and node.attr in CONNECTION
            }
            assert executes == set(), name


class TestFolders:
    def test_every_part_has_its_rules(self) -> None:
        """Each subpackage of eventstore is named in the folder rules (a new one must say
        what it may import)."""
        folders = {p.parent.name for p in (ROOT / "eventstore").glob("*/__init__.py")}
        assert folders <= set(ALLOWED)

    def test_every_part_is_in_the_design_pages_rules(self) -> None:
        """docs/design.md's folder-rules table names every part these rules cover."""
        text = (ROOT / "docs" / "design.md").read_text()
        table = text[text.index("| part | may import") :].split("\n\n")[0]
        firsts = [row.split("|")[1] for row in table.splitlines()[2:]]
        named = {name for first in firsts for name in re.findall(r"`(\w+)`", first)}
        assert set(ALLOWED) - {SHELL, *INTEGRATIONS} <= named

    def test_each_part_imports_only_what_it_may(self) -> None:
        """A part imports only the parts its rule allows: no backend outside the shell,
        no integration in the core, nothing from the CLI."""
        wrong = [
            f"{name} imports {dep}"
            for name, dep, _ in _crossings()
            if _part(dep) not in ALLOWED[_part(name)]
        ]
        assert wrong == []

    def test_other_parts_are_reached_through_their_face(self) -> None:
        """From outside a subpackage, only its ``__init__`` is imported, never a private
        module of it."""
        deep = [
            f"{name} imports {dep}"
            for name, dep, _ in _crossings()
            if _part(dep) != SHELL and dep.count(".") > 1
        ]
        assert deep == []

    def test_below_the_shell_only_errors_and_locations(self) -> None:
        """The store and the backends use the shell's errors, locations and lazy logging,
        nothing that decides or opens a journal."""
        up = [
            f"{name} imports {dep}"
            for name, dep, _ in _crossings()
            if _part(name) in {"_store", *BACKENDS} and _part(dep) == SHELL
            if dep not in BELOW_SHELL
        ]
        assert up == []

    def test_the_shell_imports_postgres_only_when_it_opens_one(self) -> None:
        """The shell's import of the PostgreSQL backend sits inside a function."""
        top = [
            name
            for name, dep, node in _crossings()
            if _part(name) == SHELL and _part(dep) == "_postgres"
            if node in ast.parse(_modules("eventstore")[name].read_text()).body
        ]
        assert top == []

    def test_import_eventstore_loads_no_integration_backend_or_tool(self) -> None:
        """``import eventstore`` and opening a SQLite journal load no integration, no
        PostgreSQL, no report, operation or CLI module, and neither structlog nor cattrs
        (loaded when a line is logged, a snapshot or an uncommon event is decoded)."""
        loaded = _loaded(
            "import eventstore, tempfile, os;"
            "eventstore.open(os.path.join(tempfile.mkdtemp(), 'j.db')).close()"
        )
        assert {_part(m) for m in loaded if m.startswith("eventstore.")} == {
            SHELL,
            "_store",
            "_sqlite",
        }
        assert {m.split(".")[0] for m in loaded} & LAZY_THIRD_PARTY == {"attrs", "orjson"}

    def test_the_root_holds_the_shell_only(self) -> None:
        """eventstore's root holds at most 15 modules: the shell; the rest are folders."""
        assert len(list((ROOT / "eventstore").glob("*.py"))) <= 15

    def test_each_subpackage_says_what_it_is(self) -> None:
        """Every package's ``__init__`` opens with a docstring."""
        for path in (ROOT / "eventstore").rglob("__init__.py"):
            assert ast.get_docstring(ast.parse(path.read_text())), path

    def test_the_rules_can_fail(self) -> None:
        """The part of a module is read from its name: a backend's private module is a
        backend, a root module the shell."""
        assert _part("eventstore._sqlite._recorder") == "_sqlite"
        assert _part("eventstore._journal") == SHELL
        assert "_sqlite" not in ALLOWED["claude_code"]


LAZY_THIRD_PARTY = {"attrs", "cattrs", "orjson", "psycopg", "sqlite_utils", "structlog"}
# What a cold start may load of tierlog (a test of modules, not of time: bench/startup.py
# times them). ``tierlog --help`` and a hook with nothing to do load the CLI's frame
# and the hook alone: no reducer, no store, no third-party package.
CLI_FRAME = {
    "eventstore",
    "eventstore._location",
    "eventstore._logging",
    "eventstore.cli",
    "eventstore.cli._claude_code",
    "eventstore.cli._main",
    "eventstore.cli._terminal",
}
HOOK = CLI_FRAME | {"eventstore.claude_code", "eventstore.claude_code._hook"}
# ``eventstore.open`` of an existing SQLite journal loads the backend and the store
# modules its recorder is built of, with the errors and events they name: not the
# session machinery (commands, decide, invariants, the state and its fold), snapshots,
# spill storage or logging, which a first session loads.
OPEN_PATH = {
    "eventstore",
    "eventstore._errors",
    "eventstore._journal",
    "eventstore._location",
    "eventstore._sqlite",
    "eventstore._sqlite._connection",
    "eventstore._sqlite._guard",
    "eventstore._sqlite._recorder",
    "eventstore._sqlite._schema",
    "eventstore._store",
    "eventstore._store._append",
    "eventstore._store._chain",
    "eventstore._store._clock",
    "eventstore._store._codec",
    "eventstore._store._links",
    "eventstore._store._recorder",
    "eventstore._store._rows",
    "eventstore._store._transaction",
    "eventstore._store._views",
    "reducers",
    "reducers._errors",
    "reducers._events",
    "reducers._json",
}
OPEN_THIRD_PARTY = {"attr", "attrs", "orjson"}  # the events' classes, the fast codec
OURS = ("eventstore", "reducers", "invariants", *LAZY_THIRD_PARTY, "attr", "asyncio")


def _loaded(code: str, stdin: str = "") -> set[str]:
    """The modules of tierlog, its layers and its heavier dependencies that ``code``
    leaves loaded in a fresh interpreter."""
    tail = f"sorted(m for m in sys.modules if m.split('.')[0] in {OURS!r})"
    code += f"\nimport sys\nprint('loaded:', {tail})"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = (x for x in out.splitlines() if x.startswith("loaded: "))
    return set(ast.literal_eval(line.removeprefix("loaded: ")))


class TestColdStart:
    def test_import_eventstore_loads_nothing_else(self) -> None:
        """``import eventstore`` loads the package's face alone: every name is imported
        when first used."""
        assert _loaded("import eventstore") == {"eventstore"}

    def test_a_name_loads_its_module_on_first_use(self) -> None:
        """``eventstore.Turn`` imports the module it lives in, and is that module's class."""
        loaded = _loaded(
            "import eventstore, eventstore._values as v; assert eventstore.Turn is v.Turn"
        )
        assert "eventstore._values" in loaded
        assert "eventstore._journal" not in loaded

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        """A name eventstore does not have is an AttributeError, as for any module."""
        with pytest.raises(AttributeError, match="no attribute 'Nope'"):
            eventstore.Nope

    def test_every_public_name_resolves(self) -> None:
        """Each name of ``__all__`` is found where the facade says it lives."""
        assert all(getattr(eventstore, name) is not None for name in eventstore.__all__)

    def test_help_loads_the_cli_frame_alone(self) -> None:
        """``tierlog --help`` builds every subcommand's parser from the CLI's frame: no
        reducer, store, integration or third-party module."""
        code = "from eventstore.cli import main\ntry: main(['--help'])\nexcept SystemExit: pass"
        assert _loaded(code) == CLI_FRAME

    def test_a_hook_with_nothing_to_do_loads_the_hook_alone(self, tmp_path: Path) -> None:
        """``tierlog claude-code hook`` on a prompt with nothing queued loads the CLI's
        frame and the standard-library hook, nothing of the journal."""
        journal = str(tmp_path / "j.db")
        argv = ["claude-code", "hook", "--journal", journal]
        code = f"from eventstore.cli import main; main({argv!r})"
        stdin = '{"hook_event_name": "UserPromptSubmit", "session_id": "s1"}'
        assert _loaded(code, stdin) == HOOK

    def test_opening_a_journal_loads_the_backend_alone(self, tmp_path: Path) -> None:
        """``eventstore.open`` of an existing SQLite journal loads the open path's
        modules and no others: no session machinery, snapshots, spills or logging."""
        db = tmp_path / "j.db"
        eventstore.open(db).close()
        code = (
            f"import eventstore; eventstore.open({str(db)!r}).close()\n"
            "import sys; assert 'logging' not in sys.modules, 'logging'"
        )
        loaded = _loaded(code)
        ours = {m for m in loaded if m.split(".")[0] in ("eventstore", "reducers", "invariants")}
        assert ours == OPEN_PATH
        assert {m.split(".")[0] for m in loaded - ours} == OPEN_THIRD_PARTY

    def test_a_first_session_loads_what_open_left_out(self, tmp_path: Path) -> None:
        """The modules an open leaves out are loaded by the first session that needs
        them (the rule can fail: the open path is not all there is)."""
        db = tmp_path / "j.db"
        code = (
            "import eventstore\n"
            f"j = eventstore.open({str(db)!r})\n"
            "j.start_session('s', eventstore.SessionConfig(window_tokens=10,"
            " trigger_tokens=8, truncator_unit='turns', floor_span=1, floor_unit='turns',"
            " on_unsafe='spill'))\n"
            "j.session('s').append_turn('user', 'hi', 1)"
        )
        loaded = _loaded(code)
        assert loaded > OPEN_PATH
        wanted = {"eventstore._session", "eventstore._store._spills", "reducers._fold"}
        assert wanted | {"eventstore._store._snapshots", "invariants"} <= loaded

    def test_import_reducers_loads_a_name_on_first_use(self) -> None:
        """``import reducers`` loads the package's face alone; an error class loads its
        module and not the events, the state or the fold."""
        assert _loaded("import reducers") == {"reducers"}
        assert _loaded("from reducers import JournalError") == {"reducers", "reducers._errors"}

    def test_every_reducers_name_resolves(self) -> None:
        """Each name of ``reducers.__all__`` is found where the face says it lives, and
        a name it does not have is an AttributeError."""
        import reducers

        assert all(getattr(reducers, name) is not None for name in reducers.__all__)
        assert set(dir(reducers)) >= set(reducers.__all__)
        with pytest.raises(AttributeError, match="no attribute 'Nope'"):
            reducers.Nope

    def test_every_store_name_resolves(self) -> None:
        """Each name of the store's face resolves, and an unknown one is an
        AttributeError."""
        from eventstore import _store

        assert all(getattr(_store, name) is not None for name in _store.__all__)
        with pytest.raises(AttributeError, match="no attribute 'Nope'"):
            _store.Nope

    def test_the_cli_names_the_ingest_formats_without_loading_them(self) -> None:
        """``tierlog ingest --format`` offers the Claude Code integration's formats and
        Codex's, written out in the CLI's frame so that its parser loads neither."""
        from eventstore import claude_code
        from eventstore.cli import _main

        assert (*claude_code.FORMATS, "codex") == _main.INGEST_FORMATS

    def test_ship_chunk_is_the_librarys(self) -> None:
        """The ship default the CLI writes out is the library's ``CHUNK``."""
        from eventstore import _ops
        from eventstore.cli import _main

        assert _main.SHIP_CHUNK == _ops.CHUNK

    def test_the_rule_can_fail(self) -> None:
        """The module list is what ran: a command that uses the store loads it."""
        code = "from eventstore.cli import main\nmain(['sessions', '/nonexistent/j.db'])"
        assert "eventstore._store" in _loaded(code)


class TestPublicNames:
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
            eventstore.InvalidArgument,
            eventstore.InvalidEvent,
            eventstore.IntegrityError,
            eventstore.UnrecoverableCompactionError,
            eventstore.MarkerInvalid,
        ):
            assert issubclass(error, eventstore.JournalError)
        assert eventstore.MarkerInvalid is invariants.MarkerInvalid
        assert eventstore.UnrecoverableCompactionError is invariants.UnrecoverableCompactionError

    def test_the_contract_suite_without_pytest_says_what_to_install(self) -> None:
        """``import eventstore.testing`` where pytest is missing is an ImportError that
        names the extra to install, not a bare ModuleNotFoundError."""
        code = "import sys; sys.modules['pytest'] = None; import eventstore.testing"
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
        )
        assert done.returncode == 1
        assert "eventstore.testing needs pytest: pip install 'tierlog[test]'" in done.stderr

    def test_a_bad_argument_is_not_a_bad_event(self) -> None:
        """InvalidArgument (a timeout, a version to read at, a query) is a ValueError and a
        JournalError, and is not taken for InvalidEvent."""
        assert issubclass(eventstore.InvalidArgument, ValueError)
        assert not issubclass(eventstore.InvalidArgument, eventstore.InvalidEvent)
