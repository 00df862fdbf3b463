"""Synthetic Claude Code transcripts of any size, shaped like the pinned CLI's (2.1.332).

A session is rounds of one assistant entry (a Bash or Read call, its usage block) and
one user entry (its result, a few KB; every 17th fails), a typed prompt every 30
rounds (every 90th round's states a rule), and a compaction (a ``compact_boundary``
and its summary) every ``compact_every`` rounds. Deterministic for a seed;
:meth:`Writer.grow` appends to the same chain, as Claude Code does.

    .venv/bin/python -m bench.transcript OUT.jsonl --mb 10
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
from pathlib import Path
from typing import Any

SESSION = "b3e1c2d4-0000-4000-8000-00000000b3e1"
CWD = "/home/dev/app"
RULES = ("Never push to the main branch.", "Always run the tests before you commit.")
LINE = "src/module_{n}.py:{m}: {word} value={v} ok"


class Writer:
    """Appends rounds to one transcript file, keeping the chain's last uuid."""

    def __init__(
        self, path: Path, seed: int = 1, compact_every: int = 200, session: str = SESSION
    ) -> None:
        self.path = path
        self.session = session
        self.random = random.Random(seed)
        self.compact_every = compact_every
        self.parent: str | None = None
        self.round = 0
        self.prompt_tokens = 20_000

    def grow(self, bytes_: int) -> int:
        """Append whole rounds until at least ``bytes_`` more are written; the file's size."""
        start = self.path.stat().st_size if self.path.exists() else 0
        with self.path.open("a", encoding="utf-8") as f:
            while f.tell() - start < bytes_:
                for entry in self._round():
                    f.write(json.dumps(entry) + "\n")
        return self.path.stat().st_size

    def compact(self) -> None:
        """Append a compaction (its boundary and summary) now."""
        with self.path.open("a", encoding="utf-8") as f:
            for entry in self._compaction(self.round):
                f.write(json.dumps(entry) + "\n")

    def _round(self) -> list[dict[str, Any]]:
        self.round += 1
        n = self.round
        out: list[dict[str, Any]] = []
        if n % self.compact_every == 0:
            out += self._compaction(n)
        if n % 30 == 1:
            rule = f" {RULES[(n // 90) % len(RULES)]}" if n % 90 == 1 else ""
            out.append(self._user(f"Next step {n}: carry on with the refactoring.{rule}"))
        call = f"toolu_{n:06d}"
        command = f"pytest tests/test_{n % 40}.py -q"
        self.prompt_tokens += self.random.randint(600, 900)
        out.append(self._assistant(n, call, command))
        failed = n % 17 == 0
        out.append(self._result(call, self._output(n, failed), failed))
        return out

    def _entry(self, kind: str, **fields: Any) -> dict[str, Any]:
        entry = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "type": kind,
            "uuid": str(uuid.UUID(int=self.random.getrandbits(128), version=4)),
            "timestamp": f"2026-12-01T10:{(self.round // 60) % 60:02d}:{self.round % 60:02d}.000Z",
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session,
            "version": "2.1.332",
            "gitBranch": "HEAD",
            **fields,
        }
        self.parent = entry["uuid"]
        return entry

    def _user(self, text: str) -> dict[str, Any]:
        return self._entry("user", message={"role": "user", "content": text})

    def _assistant(self, n: int, call: str, command: str) -> dict[str, Any]:
        usage = {"input_tokens": self.prompt_tokens, "output_tokens": 40}
        usage |= {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        content = [
            {"type": "text", "text": f"Running the tests of part {n % 40}."},
            {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}},
        ]
        message: dict[str, Any] = {"id": f"msg_{n:06d}", "type": "message", "role": "assistant"}
        message |= {"model": "claude-opus-5-5", "content": content, "usage": usage}
        return self._entry("assistant", message=message)

    def _result(self, call: str, text: str, failed: bool) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": call, "content": text, "is_error": failed}
        return self._entry("user", message={"role": "user", "content": [block]})

    def _output(self, n: int, failed: bool) -> str:
        words = ("PASSED", "checked", "collected", "ok")
        lines = [
            LINE.format(n=n % 40, m=i, word=self.random.choice(words), v=self.random.random())
            for i in range(self.random.randint(30, 50))
        ]
        if failed:
            lines.append(f"FAILED tests/test_{n % 40}.py::test_case_{n} - AssertionError")
            return "Exit code 1\n" + "\n".join(lines)
        return "\n".join(lines)

    def _compaction(self, n: int) -> list[dict[str, Any]]:
        meta = {"trigger": "auto", "preTokens": self.prompt_tokens}
        boundary = self._entry(
            "system", subtype="compact_boundary", content="Conversation compacted"
        )
        boundary |= {"parentUuid": None, "logicalParentUuid": boundary["parentUuid"]}
        boundary["compactMetadata"] = meta
        self.parent = boundary["uuid"]
        text = (
            "This session is being continued from a previous conversation that ran out of"
            f" context.\nSummary:\nRefactoring continues at step {n}; the tests pass."
        )
        summary = self._entry("user", message={"role": "user", "content": text})
        summary["isCompactSummary"] = True
        self.prompt_tokens = 20_000
        return [boundary, summary]


def main() -> None:
    """Write a transcript of about ``--mb`` megabytes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=10.0)
    args = parser.parse_args()
    args.out.unlink(missing_ok=True)
    size = Writer(args.out).grow(int(args.mb * 1e6))
    print(f"{args.out}: {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
