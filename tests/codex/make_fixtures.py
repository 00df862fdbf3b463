"""Regenerate ``tests/data/codex/`` with the real Codex CLI against the mock API.

``make fixtures-codex`` runs this. One session in three ``codex exec`` runs:

1. "Add tenant_id to orders. Never modify files under /etc.": a ``cat`` that fails
   (exit code 1), an ``ls``, an answer whose prompt (7,000 tokens) passes the
   compaction limit (5,000);
2. "Now add an index on tenant_id.": Codex compacts first; the mock's summary keeps
   the work but drops the failed ``cat``; then an ``ls`` and an answer;
3. "Also backfill tenant_id.": the mock holds the reply and the run is interrupted
   (SIGINT): a ``turn_aborted``.

The rollout is copied as ``cli-<version>-compaction.jsonl`` with the throwaway folder's
path replaced by ``/work/project`` (and the home by ``/home/dev``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from tests.codex import cli
from tests.codex.mock_api import MockApi, Reply

OUT = Path(__file__).resolve().parents[1] / "data" / "codex"
SUMMARY = "Added tenant_id to orders in migration 004; next: an index on tenant_id."
SCRIPT = [
    Reply(commands=["cat migrations/004_tenant.sql"], prompt=1_500),
    Reply(commands=["ls"], prompt=3_000),
    Reply(text="Added tenant_id in a new migration.", prompt=7_000),
    Reply(text=SUMMARY, prompt=7_100),  # the summarisation request
    Reply(commands=["ls migrations"], prompt=1_200),
    Reply(text="Index added.", prompt=1_400),
    Reply(text="(never sent)", prompt=1_500, hang=30.0),
]


def run(binary: Path, folder: Path) -> tuple[str, list[dict[str, Any]]]:
    """Run the scenario in ``folder``: the rollout's text (paths made neutral) and the
    requests the mock received."""
    home, work = folder / "home", folder / "project"
    home.mkdir()
    work.mkdir()
    with MockApi(script=list(SCRIPT)) as api:
        codex = cli.Codex(api=api, home=home, work=work, binary=binary)
        codex.exec("Add tenant_id to orders. Never modify files under /etc.")
        codex.exec("Now add an index on tenant_id.", resume=True)
        codex.exec("Also backfill tenant_id.", resume=True, interrupt_at=len(SCRIPT))
        (rollout,) = codex.rollouts()
    text = rollout.read_text()
    text = text.replace(str(work), "/work/project").replace(str(home), "/home/dev")
    return text, api.requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, default=cli.BINARY)
    args = parser.parse_args()
    reason = cli.missing(args.binary)
    if reason is not None:
        raise SystemExit(reason)
    with tempfile.TemporaryDirectory() as folder:
        text, _ = run(args.binary, Path(folder))
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"cli-{cli.VERSION}-compaction.jsonl"
    target.write_text(text)
    print(f"wrote {target.relative_to(OUT.parents[1])}")


if __name__ == "__main__":
    main()
