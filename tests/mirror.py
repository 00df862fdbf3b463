"""Which source modules have a test module of their own: ``python -m tests.mirror``.

``eventstore/_store/_chain.py`` is mirrored by ``tests/store/test_chain.py``; the
shell (``eventstore``'s root) by ``tests/shell``. Prints one line per module, those
without a test module of their own marked ``-``, and the count.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = {
    "eventstore": "shell",
    "reducers": "reducers",
    "invariants": "invariants",
    **{f"eventstore/{p}": p.lstrip("_") for p in ("_store", "_sqlite", "_postgres", "_ops")},
    **{f"eventstore/{p}": p.lstrip("_") for p in ("_report", "cli", "claude_code")},
    "eventstore/openai_agents": "openai_agents",
    "eventstore/langchain": "langchain",
    "eventstore/codex": "codex",
}


def mirrors() -> list[tuple[str, str, bool]]:
    """``(source module, its test module, whether that exists)`` for every module."""
    found = []
    for package, part in PARTS.items():
        for source in sorted((ROOT / package).glob("_*.py")):
            if source.name in ("__init__.py", "__main__.py"):
                continue
            test = f"tests/{part}/test_{source.stem.lstrip('_')}.py"
            found.append((f"{package}/{source.name}", test, (ROOT / test).exists()))
    return found


if __name__ == "__main__":
    rows = mirrors()
    for source, test, exists in rows:
        print(f"{'yes' if exists else ' - '}  {source:<42} {test}")
    print(
        f"{sum(e for *_, e in rows)} of {len(rows)} source modules have a test module of their own"
    )
