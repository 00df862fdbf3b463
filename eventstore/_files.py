"""Spill files and resume contexts: the bytes tierlog writes and hashes.

Both are JSON Lines of canonical JSON, so the same turns always give the same
bytes and the same sha256, on any run and machine.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from reducers import Node, canonical_json


def render_turns(turns: Iterable[Mapping[str, object]]) -> bytes:
    """Raw turns as JSON Lines: ``{"content", "index", "role", "tokens"}`` a line."""
    return b"".join(canonical_json(dict(t)) + b"\n" for t in turns)


def render_digest(nodes: Iterable[Node], tail: Iterable[Mapping[str, object]]) -> bytes:
    """A digest context: every live summary node, then the verbatim turns still resident."""
    lines = [
        canonical_json(
            {
                "kind": "summary",
                "node_id": n.node_id,
                "tier": n.tier,
                "covers": [n.covers_lo, n.covers_hi],
                "summary": n.summary,
                "dispositions": dict(n.dispositions),
                "constraints": list(n.constraints),
                "resolved_ids": list(n.resolved_ids),
                "unresolved_ids": list(n.unresolved_ids),
            }
        )
        for n in nodes
    ]
    lines += [canonical_json({"kind": "turn", **t}) for t in tail]
    return b"".join(line + b"\n" for line in lines)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` durably: temp file, fsync, rename, fsync the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def file_problem(path: Path, sha256: str, size: int) -> str | None:
    """Why the file at ``path`` is not the recorded bytes, or ``None`` if it is."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror}"
    if len(data) != size:
        return f"{path} has {len(data)} bytes, {size} recorded"
    if hashlib.sha256(data).hexdigest() != sha256:
        return f"{path} does not match its recorded sha256"
    return None
