"""The values a Codex rollout is read into (see ``_rollout``)."""

from __future__ import annotations

from typing import TypeAlias

import attrs


@attrs.frozen(kw_only=True)
class Note:
    """A guess, skip or fallback made while reading: ``kind`` names the heuristic,
    ``text`` says what was done, ``line`` where, ``count`` how many items it concerns."""

    kind: str
    text: str
    line: int | None = None
    count: int = 1


@attrs.frozen(kw_only=True)
class Message:
    """A ``message`` item; ``typed`` when the user wrote it (not context Codex adds)."""

    line: int
    role: str
    text: str
    typed: bool = False


@attrs.frozen(kw_only=True)
class Call:
    """A tool call the model made; ``command`` is its shell command, if it runs one."""

    line: int
    call_id: str
    name: str
    arguments: str
    command: str


@attrs.frozen(kw_only=True)
class Output:
    """A call's output: whether it failed, and where that was read (``source``:
    ``exec_command_end``, ``item_completed``, ``metadata``, ``success``, ``output_text``,
    or ``""`` when nothing says)."""

    line: int
    call_id: str
    text: str
    failed: bool
    exit_code: int | None
    source: str


@attrs.frozen(kw_only=True)
class Reasoning:
    """A ``reasoning`` item's readable summary (its content is encrypted)."""

    line: int
    text: str


@attrs.frozen(kw_only=True)
class Usage:
    """A ``token_count`` event: the last call's prompt and output tokens."""

    line: int
    prompt: int
    output: int
    window: int | None


@attrs.frozen(kw_only=True)
class Aborted:
    """A ``turn_aborted`` event: the user interrupted the turn (or it was replaced)."""

    line: int
    reason: str


@attrs.frozen(kw_only=True)
class Compaction:
    """A ``compacted`` item: the summary message and, when Codex wrote it, the texts of
    ``replacement_history`` (the user messages it kept, the summary last)."""

    line: int
    message: str
    kept: tuple[str, ...] | None


Item: TypeAlias = Message | Call | Output | Reasoning | Usage | Aborted | Compaction


@attrs.frozen(kw_only=True)
class Rollout:
    """A rollout's items in file order, and the notes made reading it."""

    session_id: str
    cli_version: str
    items: tuple[Item, ...]
    notes: tuple[Note, ...]
