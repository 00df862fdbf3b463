"""``tierlog claude-code install`` / ``uninstall``: tierlog's hooks in a ``settings.json``.

Claude Code reads hooks from ``~/.claude/settings.json`` (every project: ``--user``),
``<project>/.claude/settings.json`` (one project, the default) or any settings file
named with ``--settings`` (``.claude/settings.local.json`` keeps them out of version
control). The hooks run the interpreter tierlog is installed in on the hook module
itself (``python -I -S .../eventstore/claude_code/_hook.py --journal PATH``): isolated
from the project's folder, and without the cost of importing tierlog on every prompt.
The journal is ``<.claude folder>/tierlog/journal.db`` unless ``--journal`` names one;
its folder is made at install (with a ``.gitignore`` of ``*``), the journal on first use.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from eventstore.claude_code import _hook, _settings
from reducers import InvalidArgument

# event -> (matcher, timeout in seconds): SessionStart waits for PreCompact's ingest
EVENTS: dict[str, tuple[str | None, int]] = {
    "PreCompact": (None, 60),
    "SessionStart": ("compact", 60),
    "PostCompact": (None, 10),
    "UserPromptSubmit": (None, 10),
    "Stop": (None, 10),
    "SessionEnd": (None, 10),
}
MAX_SETTINGS = 16 * 2**20


@attrs.frozen(kw_only=True)
class Change:
    """What install or uninstall did to a settings file."""

    settings: Path
    journal: Path | None
    action: str  # "installed", "updated", "unchanged", "removed", "absent"
    also: tuple[Path, ...] = ()  # other settings files a session may read that run them too


def settings_file(project: str | None, user: bool, settings: str | None) -> Path:
    """The settings file the options name (InvalidArgument for more than one)."""
    if sum(x is not None for x in (project, settings)) + user > 1:
        raise InvalidArgument("give one of --project, --user and --settings")
    if settings is not None:
        return Path(settings).absolute()
    if user:
        return Path.home() / ".claude" / "settings.json"
    folder = Path(project or ".").expanduser().absolute()
    if not folder.is_dir():
        raise InvalidArgument(f"--project {project}: no such folder")
    return folder / ".claude" / "settings.json"


def default_journal(settings: Path) -> Path:
    """``tierlog/journal.db`` in the folder of the settings file (``.claude/``)."""
    return settings.parent / "tierlog" / "journal.db"


def hook_command(journal: Path, *, tell_summarizer: bool = False) -> str:
    """The command Claude Code runs (through a shell) for every event (see the module
    doc). The hook itself always exits 0; ``|| exit 1`` covers the interpreter failing to
    start it (tierlog uninstalled, its venv moved: Python exits 2, which would block every
    prompt and compaction): 1 is an error Claude Code shows and goes on."""
    words = [sys.executable, "-I", "-S", str(Path(_hook.__file__).resolve())]
    words += ["--journal", str(journal)]
    words += ["--tell-summarizer"] if tell_summarizer else []
    return shlex.join(words) + " || exit 1"


def groups(command: str) -> dict[str, dict[str, Any]]:
    """tierlog's group of hooks for each event it uses."""
    out: dict[str, dict[str, Any]] = {}
    for event, (matcher, timeout) in EVENTS.items():
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
        out[event] = group
    return out


def install(
    settings: Path, journal: str | Path | None = None, *, tell_summarizer: bool = False
) -> Change:
    """Merge tierlog's hooks into ``settings`` (created if missing), journaling to
    ``journal`` (default: :func:`default_journal`). Writes nothing on bad input."""
    if journal is not None and ("://" in str(journal) or str(journal).startswith("postgres")):
        raise InvalidArgument(
            f"--journal {journal}: the hooks journal to a SQLite file (tierlog ship copies it on)"
        )
    journal = Path(journal or default_journal(settings)).expanduser().absolute()
    if journal.exists() and not journal.is_file():
        raise InvalidArgument(f"--journal {journal}: not a file (a folder, a device or a FIFO)")
    before = _read(settings)
    command = hook_command(journal, tell_summarizer=tell_summarizer)
    after = _edit(settings, lambda: _settings.install(before, groups(command)))
    action = "unchanged" if after == before else "installed" if before is None else "updated"
    if after != before:
        _make_journal_folder(journal, journal == default_journal(settings).absolute())
        _write(settings, after, before)
    return Change(settings=settings, journal=journal, action=action, also=also_running(settings))


def also_running(settings: Path) -> tuple[Path, ...]:
    """The other settings files Claude Code reads with ``settings`` (the user's, and a
    project's ``settings.json`` and ``settings.local.json``) that run tierlog's hooks: a
    session reading both runs every hook twice."""
    folder = settings.parent
    near = [folder / "settings.json", folder / "settings.local.json"]
    candidates = [Path.home() / ".claude" / "settings.json", *near]
    found: list[Path] = []
    for other in candidates:
        if os.path.realpath(other) in {os.path.realpath(settings), *map(os.path.realpath, found)}:
            continue
        with contextlib.suppress(InvalidArgument):
            text = _read(other)
            if text is not None and _settings.holds_ours(text):
                found.append(other)
    return tuple(found)


def uninstall(settings: Path) -> Change:
    """Take tierlog's hooks out of ``settings``; the journal stays."""
    before = _read(settings)
    if before is None:
        return Change(settings=settings, journal=None, action="absent")
    after = _edit(settings, lambda: _settings.uninstall(before))
    if after == before:
        return Change(settings=settings, journal=None, action="unchanged")
    _write(settings, after, before)
    return Change(settings=settings, journal=None, action="removed")


def _edit(settings: Path, edit: Callable[[], str]) -> str:
    """``edit()``, its InvalidArgument naming the file."""
    try:
        return edit()
    except InvalidArgument as exc:
        raise InvalidArgument(f"{settings}: {exc}") from None


def _read(settings: Path) -> str | None:
    """The settings text, ``None`` when there is no file (InvalidArgument naming it if it
    cannot be read as a settings file)."""
    try:
        with open(settings, "rb") as f:
            data = f.read(MAX_SETTINGS + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidArgument(f"{settings}: {exc.strerror}") from None
    if len(data) > MAX_SETTINGS:
        raise InvalidArgument(f"{settings}: larger than {MAX_SETTINGS} bytes")
    try:
        text = data.decode("utf-8")
        _settings.parse(text) if text.strip() else None
    except (UnicodeDecodeError, InvalidArgument) as exc:
        raise InvalidArgument(f"{settings}: {exc}") from None
    return text


def _write(settings: Path, text: str, before: str | None) -> None:
    """Replace the file atomically, keeping its permissions; a symbolic link (a dotfiles
    folder's) stays one and the file it names is replaced. InvalidArgument, nothing
    written, when the file no longer holds ``before`` (another program wrote it since
    tierlog read it: its change would be lost)."""
    settings = Path(os.path.realpath(settings))
    settings.parent.mkdir(parents=True, exist_ok=True)
    mode = settings.stat().st_mode & 0o7777 if settings.exists() else None
    temporary = settings.with_name(f".{settings.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    if mode is not None:
        temporary.chmod(mode)
    try:
        if _read(settings) != before:
            raise InvalidArgument(f"{settings}: changed while tierlog edited it; run it again")
        os.replace(temporary, settings)
    finally:
        temporary.unlink(missing_ok=True)


def _make_journal_folder(journal: Path, default: bool) -> None:
    """The journal's folder; the default one is never committed (a ``.gitignore``)."""
    try:
        journal.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidArgument(f"--journal {journal}: its folder cannot be made: {exc}") from None
    ignore = journal.parent / ".gitignore"
    if default and not ignore.exists():
        ignore.write_text("# tierlog's journal of Claude Code sessions\n*\n", encoding="utf-8")
