"""``tierlog ingest``'s work: transcripts read and mapped, then written to the journal
(imported when the command runs: the integrations are the heaviest part of tierlog)."""

from __future__ import annotations

import json

import attrs

from eventstore import codex
from eventstore._journal import Journal
from eventstore.claude_code import IngestResult, Loaded, ingest_loaded, load
from eventstore.cli import _output as out
from eventstore.cli._terminal import json_safe, say, warn
from reducers import InvalidEvent


@attrs.frozen
class _Rollout:
    """A Codex rollout read and mapped, not yet written."""

    path: str
    mapped: codex.Mapped


Transcript = Loaded | _Rollout


def ingest(db: str, files: list[str], fmt: str | None, as_json: bool) -> int:
    """Read every file, write what was read, print the results; the exit code."""
    loaded, bad = _load_transcripts(files, fmt)  # before the journal is touched
    results = []
    if loaded:
        with Journal(db) as journal:
            for item in loaded:
                try:
                    results.append(_write_transcript(journal, item))
                except InvalidEvent as exc:
                    warn("ingest", f"error: {item.path}: {exc}")
                    bad += 1
    for r in results:
        for warning in r.warnings:
            warn("ingest", f"warning: {r.path}: {warning}")
    if as_json:
        print(
            json_safe(json.dumps([attrs.asdict(r) for r in results], indent=2, ensure_ascii=False))
        )
    else:
        say("\n".join(_ingest_text(r) for r in results) or "nothing ingested")
    return 2 if bad else 0


def _load_transcripts(paths: list[str], fmt: str | None) -> tuple[list[Transcript], int]:
    """Each file read and mapped; an unreadable one reported. Returns them and the bad count."""
    loaded: list[Transcript] = []
    bad = 0
    for path in paths:
        try:
            if fmt == "codex" or (fmt is None and codex.is_rollout(path)):
                loaded.append(_Rollout(path, codex.load(path)))
            else:
                loaded.append(load(path, fmt or "claude-code"))
        except InvalidEvent as exc:
            warn("ingest", f"error: {path}: {exc}")
            bad += 1
    return loaded, bad


def _write_transcript(journal: Journal, item: Transcript) -> IngestResult | codex.IngestResult:
    if isinstance(item, _Rollout):
        return codex.ingest_loaded(journal, item.mapped, item.path)
    return ingest_loaded(journal, item)


def _ingest_text(r: IngestResult | codex.IngestResult) -> str:
    return r.text() if isinstance(r, codex.IngestResult) else out.ingest_text(r)
