"""``tierlog ingest``'s work: transcripts read and mapped, then written to the journal
(imported when the command runs: the integrations are the heaviest part of tierlog)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from eventstore import codex
from eventstore._journal import Journal
from eventstore.claude_code import IngestResult, Loaded, ingest_loaded, load
from eventstore.claude_code import ingest as claude_ingest
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
    """Read every file, write what was read, print the results; the exit code.

    Into a journal file that exists, each Claude Code transcript goes through
    ``claude_code.ingest``, which reads only what the file gained since the session's
    last ingest (one transaction a file: a file it refuses writes nothing). Otherwise
    every file is read first, so that bad input creates no journal."""
    if Path(db).is_file():
        results, bad = _ingest_in_place(db, files, fmt)
    else:
        results, bad = _ingest_read_first(db, files, fmt)
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


def _ingest_in_place(
    db: str, files: list[str], fmt: str | None
) -> tuple[list[IngestResult | codex.IngestResult], int]:
    """Each file ingested into the journal ``db`` in turn; the results and the bad count."""
    results: list[IngestResult | codex.IngestResult] = []
    bad = 0
    with Journal(db) as journal:
        for path in files:
            try:
                if fmt == "codex" or (fmt is None and codex.is_rollout(path)):
                    results.append(codex.ingest_loaded(journal, codex.load(path), path))
                else:
                    results.append(claude_ingest(journal, path, fmt or "claude-code"))
            except InvalidEvent as exc:
                warn("ingest", f"error: {path}: {exc}")
                bad += 1
    return results, bad


def _ingest_read_first(
    db: str, files: list[str], fmt: str | None
) -> tuple[list[IngestResult | codex.IngestResult], int]:
    """Every file read and mapped before the journal is touched, then written."""
    loaded, bad = _load_transcripts(files, fmt)
    results: list[IngestResult | codex.IngestResult] = []
    if loaded:
        with Journal(db) as journal:
            for item in loaded:
                try:
                    results.append(_write_transcript(journal, item))
                except InvalidEvent as exc:
                    warn("ingest", f"error: {item.path}: {exc}")
                    bad += 1
    return results, bad


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
    return out.rollout_text(r) if isinstance(r, codex.IngestResult) else out.ingest_text(r)
