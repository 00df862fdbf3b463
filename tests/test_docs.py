"""Docs that cannot drift: every snippet runs, every command is documented and helped.

Modelled on sqlite-utils' ``tests/test_docs.py``. Each page's ```python blocks run in
order, in one namespace, in an empty folder; a block fenced ```python postgres runs
with ``postgresql://localhost/fleet`` pointed at a throwaway cluster.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventstore.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = sorted([README, ROOT / "bench" / "README.md", *(ROOT / "docs").glob("*.md")])
BLOCK = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
PLACEHOLDER_URL = "postgresql://localhost/fleet"


def _blocks(page: Path) -> list[tuple[str, str]]:
    """``(tags, code)`` of each python block of ``page``, in order."""
    return [(m.group(1).strip(), m.group(2)) for m in BLOCK.finditer(page.read_text())]


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[io.StringIO]:
    """Run in ``folder`` with standard output captured."""
    out, cwd = io.StringIO(), os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out):
            yield out
    finally:
        os.chdir(cwd)


def run_page(page: Path, folder: Path, url: str | None = None) -> str:
    """Run every python block of ``page`` in ``folder``; what they printed."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    with _inside(folder) as out:
        for tags, code in _blocks(page):
            if "postgres" in tags.split():
                assert url is not None, f"{page.name}: a postgres block needs a cluster"
                code = code.replace(PLACEHOLDER_URL, url)
            exec(compile(code, page.name, "exec"), namespace)
    return out.getvalue()


PRINT_COMMENT = re.compile(r"^\s*print\(.*\)\s+#\s?(.*)$", re.M)
# Comments beside a print that describe what it prints rather than spell it out.
DESCRIBED = {"the notes: what tierlog had to assume"}


def _print_comments(page: Path) -> list[str]:
    """The comment beside each ``print(...)`` of the page's python blocks that says
    what it prints, in order."""
    found = [c.strip() for _, code in _blocks(page) for c in PRINT_COMMENT.findall(code)]
    return [comment for comment in found if comment not in DESCRIBED]


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every ``tierlog`` subcommand's parser, by name (nested ones as ``a b``)."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[f"{prefix}{name}"] = sub
                    walk(sub, f"{prefix}{name} ")

    walk(build_parser(), "")
    return found


def _needs_postgres(page: Path) -> bool:
    return any("postgres" in tags.split() for tags, _ in _blocks(page))


class TestSnippets:
    @pytest.mark.parametrize(
        "page", [p for p in PAGES if _blocks(p) and not _needs_postgres(p)], ids=lambda p: p.name
    )
    def test_every_python_block_runs(self, page: Path, tmp_path: Path) -> None:
        """Each page's python blocks run, in order, in an empty folder, and each
        ``print(...)  # comment`` prints its comment (a line of the output, in order)."""
        printed = iter(run_page(page, tmp_path).splitlines())
        for comment in _print_comments(page):
            assert comment in printed, f"{page.name}: nothing printed {comment!r}"

    @pytest.mark.parametrize("page", [p for p in PAGES if _needs_postgres(p)], ids=lambda p: p.name)
    def test_postgres_blocks_run_on_a_cluster(
        self, page: Path, tmp_path: Path, pg_url: str
    ) -> None:
        """A page with a postgres block runs whole against a throwaway cluster."""
        run_page(page, tmp_path, pg_url)

    def test_the_embedding_example_prints_what_its_comments_say(self, tmp_path: Path) -> None:
        """The README's example refuses the forgetful summary, then resumes from the digest."""
        assert run_page(README, tmp_path).splitlines() == ["['C5', 'C5']", "digest 950"]
        assert (tmp_path / "agent.db").exists()
        assert list((tmp_path / "agent.db.spills").iterdir())

    def test_a_print_comment_is_what_it_prints(self, tmp_path: Path) -> None:
        """The comment check reads a print's comment, skips descriptions, and keeps order."""
        page = tmp_path / "page.md"
        page.write_text(
            "```python\nprint(1 + 1)  # 2\nprint('x')  # the notes: what tierlog had to"
            " assume\nprint([3])  # [3]\n```\n"
        )
        assert _print_comments(page) == ["2", "[3]"]
        assert run_page(page, tmp_path).splitlines() == ["2", "x", "[3]"]

    def test_a_failing_block_fails_the_page(self, tmp_path: Path) -> None:
        """The runner does not swallow errors: a block that raises fails its page."""
        page = tmp_path / "bad.md"
        page.write_text("text\n```python\nraise RuntimeError('drifted')\n```\n")
        with pytest.raises(RuntimeError, match="drifted"):
            run_page(page, tmp_path)


class TestStoragePage:
    def test_the_roles_table_lists_each_protocols_members(self) -> None:
        """storage.md's table of roles names every member of each role protocol, and no
        other: a member added to the port is a member documented."""
        import eventstore

        page = (ROOT / "docs" / "storage.md").read_text()
        rows = re.findall(r"^\| `(\w+)` \| (.*?) \|", page, re.M)
        documented = {role: set(re.findall(r"`(\w+)`", members)) for role, members in rows}
        roles = ["EventLog", "ReplayReads", "SnapshotStore", "AuditReads", "Transfer"]
        for role in roles:
            members = {n for n in vars(getattr(eventstore, role)) if not n.startswith("_")}
            assert documented.get(role) == members, role

    def test_the_sketch_fails_only_the_contracts_the_page_names(self, tmp_path: Path) -> None:
        """storage.md's in-memory backend, saved with its test class as the page says and
        run by pytest as a third party runs it, fails exactly the contract tests the page
        says it skips, and passes the rest."""
        page = (ROOT / "docs" / "storage.md").read_text()
        claim = page[page.index("this sketch passes every test but") :].split("\n\n")[0]
        named = set(re.findall(r"`(test_\w+)`", claim))
        sketch, their_test = (code for _, code in _blocks(ROOT / "docs" / "storage.md")[:2])
        (tmp_path / "test_memory_log.py").write_text(f"{sketch}\n\n{their_test}")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_memory_log.py"],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        failed = set(re.findall(r"::(\w+)(?:\[.*?\])? FAILED", done.stdout))
        passed = re.findall(r" PASSED", done.stdout)
        assert len(named) == 2
        assert failed == named, done.stdout[-3000:]
        assert len(passed) > 30


class TestCommands:
    @pytest.mark.parametrize("name", sorted(_commands()))
    def test_every_command_is_in_the_docs(self, name: str) -> None:
        """Each ``tierlog`` command appears as ``tierlog <name>`` in the README or docs."""
        text = "\n".join(p.read_text() for p in PAGES)
        assert f"tierlog {name}" in text

    @pytest.mark.parametrize("name", sorted(_commands()))
    def test_every_command_has_help_with_an_example(self, name: str) -> None:
        """Each command's ``--help`` has a description and an example invocation."""
        sub = _commands()[name]
        text = sub.format_help()
        assert sub.description or sub.format_usage() != text
        assert re.search(r"(?im)^\s*example", text), name
        assert f"tierlog {name}" in text.split("xample", 1)[1], name


class TestPages:
    def test_the_readme_is_short(self) -> None:
        """A newcomer reads the README in five minutes: at most 350 lines."""
        assert len(README.read_text().splitlines()) <= 350

    @pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
    def test_relative_links_resolve(self, page: Path) -> None:
        """Every relative link of a page names a file that exists."""
        links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text())
        missing = [link for link in links if not (page.parent / link).exists()]
        assert missing == []
