"""Witnesses: each session's head, kept elsewhere, to catch what a hash chain cannot.

A session's chain proves every event links to the one before it, so an edited,
inserted, reordered or deleted event *inside* the log is found. It cannot see
its own end: deleting the newest events (or the whole session) leaves a shorter
chain that is still valid. A witness, the head version and hash recorded by
``tierlog head`` and stored outside the journal, pins the end: the event at the
witnessed version must still be there with the witnessed hash.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import attrs
import cattrs

from eventstore._journal import Journal
from eventstore._ops._audit import Finding
from eventstore._store import strict_converter
from reducers import InvalidArgument


@attrs.frozen(kw_only=True)
class SessionHead:
    """A session's last version and its hash: what a witness keeps."""

    session_id: str
    version: int
    hash: str


def heads(journal: Journal, session_ids: Iterable[str] | None = None) -> list[SessionHead]:
    """The head of every session (or of ``session_ids``), sorted by session id."""
    found = [
        SessionHead(session_id=s, version=h.version, hash=h.hash)
        for s, h in journal.recorder.heads().items()
    ]
    if session_ids is None:
        return found
    wanted = set(session_ids)
    return [h for h in found if h.session_id in wanted]


def read_witness(text: str, source: str) -> list[SessionHead]:
    """Heads from the JSON that ``tierlog head --json`` printed (InvalidEvent if it is not)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidArgument(f"{source} is not JSON: {exc}") from None
    if not isinstance(data, list):
        raise InvalidArgument(f"{source}: a witness is the list `tierlog head --json` prints")
    try:
        return strict_converter().structure(data, list[SessionHead])
    except cattrs.BaseValidationError as exc:
        why = "; ".join(cattrs.transform_error(exc))
        raise InvalidArgument(
            f"{source} is not a witness from `tierlog head --json`: {why}"
        ) from None


def check_witness(journal: Journal, witness: Iterable[SessionHead]) -> list[Finding]:
    """A finding for each witnessed head the journal no longer holds as witnessed."""
    found = []
    for w in witness:
        problem = _problem(journal, w)
        if problem:
            found.append(
                Finding(
                    check="witness", session_id=w.session_id, version=w.version, problem=problem
                )
            )
    return found


def _problem(journal: Journal, w: SessionHead) -> str | None:
    head = journal.recorder.head(w.session_id).version
    if head == 0:
        return f"the session is missing (witnessed at version {w.version})"
    if head < w.version:
        return f"the log ends at version {head}: witnessed events were deleted"
    stored = journal.recorder.hash_at(w.session_id, w.version)
    if stored != w.hash:
        return f"the event at version {w.version} is not the witnessed one (hash {stored})"
    return None
