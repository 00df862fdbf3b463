"""tierlog's Claude Code hook: one entry point for every hook event, its JSON on stdin.

Claude Code starts a new process for every hook, ``UserPromptSubmit`` on every prompt,
so this module imports nothing but the standard library: ``tierlog claude-code
install`` runs it as a script (``python -I -S .../_hook.py``), which starts in tens of
milliseconds. It reads and writes small files in the journal's hook folder
(``<journal>.claude-code/``, :class:`Folder`) and leaves the journal work (ingest,
judging a summary) to a worker process (:mod:`._worker`) it starts and does not wait
for, one at a time per session:

- ``PreCompact``: start the worker that ingests the transcript and writes the block
  ``SessionStart`` will give (``<session>.compact``). With ``--tell-summarizer`` it
  waits for it and prints the live obligations, so the summarizer reads them.
- ``SessionStart`` (source ``compact``): wait for that worker, then return the block as
  ``additionalContext``.
- ``PostCompact``: start the worker that ingests the compaction once Claude Code has
  written it, judges its summary and queues what it dropped (``<session>.queue``).
- ``UserPromptSubmit``: deliver the queue, once, as ``additionalContext``.
- ``Stop`` and ``SessionEnd``: after a delivery, start the worker that ingests the
  transcript again, so the journal records what the agent was told.

Never in the user's way: whatever goes wrong, the hook prints one line on standard
error and exits 0 (a ``PreCompact`` hook exiting 2 would block the compaction). A
worker's error is kept in ``<session>.error`` and printed by the next hook.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

FOLDER_SUFFIX = ".claude-code"
MAX_CHARS = 10_000  # Claude Code's limit on a hook's additionalContext, in UTF-16 units
MAX_INPUT = 64 * 2**20  # a hook's JSON (PostCompact carries the whole summary)
SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
WORKER = "eventstore.claude_code._worker"
POLL = 0.01
PROMPT_WAIT = 2.0  # a prompt waits this long for PostCompact's queue, then goes on without
MAX_LOG = 2**20
RUNNING = "running"  # the folder of the workers' pid files, inside the hook folder
PID_FILES = ("busy-", "died-")


def units(text: str) -> int:
    """The length of ``text`` as Claude Code counts it: UTF-16 units (an emoji is two)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def fit(text: str) -> str:
    """``text`` cut to MAX_CHARS UTF-16 units, never splitting a pair (past that, Claude
    Code puts it in a file and the model sees a 2 KB preview)."""
    return text.encode("utf-16-le", "surrogatepass")[: 2 * MAX_CHARS].decode("utf-16-le", "ignore")


class HookError(Exception):
    """Input the hook cannot act on (it is reported on one line, never raised to Claude)."""


class Folder:
    """The hook's files for one session, beside the journal.

    The workers' pid files (``busy-``, ``died-``) live in a folder of their own,
    ``<journal>.claude-code/running/``, which holds only the workers running or just
    dead: a hook that waits for a worker lists it, and the files every session leaves
    behind (its lock and log) do not make the hooks of later sessions slower. When
    ``running`` is there but no writable folder (a file of that name, a folder this user
    cannot write), the pid files are kept in the hook folder itself instead, and
    ``unusable`` says why (the worker notes it in the journal): the session goes on."""

    def __init__(self, journal: str, session: str) -> None:
        if not SESSION.fullmatch(session):
            raise HookError(f"session_id {session[:40]!r} is not a usable session id")
        self.journal = journal
        self.root = journal + FOLDER_SUFFIX
        self.running, self.unusable = pid_folder(self.root)
        self.session = session

    def path(self, what: str) -> str:
        """``<journal>.claude-code/<session>.<what>``; a pid file (``busy-...``,
        ``died-...``) is in ``running/``."""
        folder = self.running if what.startswith(PID_FILES) else self.root
        return os.path.join(folder, f"{self.session}.{what}")

    def make(self) -> None:
        """Create the folder, its ``running/`` (and the journal's folder) if missing."""
        try:
            os.makedirs(self.running, exist_ok=True)
        except OSError:
            if self.running == self.root:
                raise
            os.makedirs(self.root, exist_ok=True)
            self.running, self.unusable = pid_folder(self.root)
            if self.running != self.root:  # neither a folder nor in the way: unusable
                self.running, self.unusable = self.root, f"{self.running} cannot be made"

    def read(self, what: str) -> str | None:
        """The text of a file, ``None`` when there is none."""
        try:
            with open(self.path(what), encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def write(self, what: str, text: str) -> None:
        """Replace a file atomically (readers see the old text or the new, whole)."""
        path = self.path(what)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temporary, path)

    def take(self, what: str) -> str | None:
        """Read a file and remove it, so only one caller ever gets it."""
        claimed = self.path(f"{what}.{os.getpid()}.taken")
        try:
            os.rename(self.path(what), claimed)
        except FileNotFoundError:
            return None
        try:
            with open(claimed, encoding="utf-8") as f:
                return f.read()
        finally:
            os.unlink(claimed)

    def remove(self, what: str) -> None:
        """Remove a file if it is there."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path(what))


def pid_folder(root: str) -> tuple[str, str]:
    """Where the workers' pid files go: ``root``'s ``running/`` (missing until the first
    worker starts), unless that is there but no folder this user can write: then ``root``
    itself, and why (see :class:`Folder`)."""
    running = os.path.join(root, RUNNING)
    if os.path.isdir(running):
        if os.access(running, os.W_OK | os.X_OK):
            return running, ""
        return root, f"{running} is a folder this user cannot write"
    if os.path.lexists(running):
        return root, f"{running} is not a folder"
    return running, ""


# -- the worker ------------------------------------------------------------------------
def worker_command(event: str, folder: Folder, transcript: str, busy: str) -> list[str]:
    """The worker's command line: this interpreter, isolated from the project's folder."""
    return [
        sys.executable,
        "-I",
        "-m",
        WORKER,
        event,
        "--journal",
        folder.journal,
        "--session",
        folder.session,
        "--transcript",
        transcript,
        "--busy",
        busy,
    ]


def start_worker(event: str, folder: Folder, transcript: str) -> None:
    """Start the worker for ``event`` and return: ``<session>.busy-<event>.<n>`` holds its
    pid until it is done (it removes the file last)."""
    import subprocess  # only the hooks that start one pay for it

    busy = f"busy-{event}.{os.getpid()}"
    folder.make()
    folder.write(busy, str(os.getpid()))
    with _log(folder) as log:
        child = subprocess.Popen(
            worker_command(event, folder, transcript, busy),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # it outlives the hook, and Claude Code's exit
        )
    try:  # not O_CREAT: a worker that has finished already removed the file
        fd = os.open(folder.path(busy), os.O_WRONLY | os.O_TRUNC)
    except FileNotFoundError:
        return
    with os.fdopen(fd, "w") as f:
        f.write(str(child.pid))


def run_worker(event: str, folder: Folder, transcript: str, timeout: float) -> str:
    """Run the worker for ``event`` and wait for it: what it printed."""
    import subprocess

    busy = f"busy-{event}.{os.getpid()}"
    folder.make()
    folder.write(busy, str(os.getpid()))
    with _log(folder) as log:
        done = subprocess.run(
            [*worker_command(event, folder, transcript, busy), "--print-live"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            timeout=timeout,
            check=False,
        )
    return done.stdout.decode("utf-8", "replace")


def _log(folder: Folder) -> IO[bytes]:
    """The workers' standard error (what escapes them), started afresh past MAX_LOG bytes."""
    path = folder.path("log")
    big = os.path.exists(path) and os.path.getsize(path) > MAX_LOG
    return open(path, "wb" if big else "ab")  # closed by the caller's with


def wait_for(folder: Folder, event: str, seconds: float) -> bool:
    """Wait until every worker started for ``event`` is done (its pid file gone, or its pid
    not a running process); ``False`` when ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while True:
        if not _busy(folder.running, f"{folder.session}.busy-{event}."):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)


def wait_idle(journal: str, seconds: float) -> bool:
    """Wait until no hook worker of any session is busy on ``journal``; ``False`` when
    ``seconds`` pass first. (Tests and benchmarks wait with it before reading the journal.)"""
    deadline = time.monotonic() + seconds
    while True:
        if not _busy(pid_folder(journal + FOLDER_SUFFIX)[0], ""):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)


def _busy(root: str, prefix: str) -> bool:
    """Whether a worker whose pid file in ``root`` (a ``running/`` folder) starts with
    ``prefix`` still runs (the file of a worker that died before removing it becomes
    ``<session>.died-<event>.<n>``, which the next worker notes in the journal)."""
    try:
        names = [n for n in os.listdir(root) if n.startswith(prefix) and ".busy-" in n]
    except (FileNotFoundError, NotADirectoryError):
        return False
    running = False
    for name in names:
        path = os.path.join(root, name)
        try:
            with open(path) as f:
                pid = int(f.read() or 0)
        except (FileNotFoundError, ValueError):
            continue
        if _alive(pid):
            running = True
        else:
            with contextlib.suppress(FileNotFoundError):
                os.replace(path, os.path.join(root, name.replace(".busy-", ".died-", 1)))
    return running


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- the events ------------------------------------------------------------------------
class Hook:
    """One hook invocation: its input, options and where its output goes."""

    def __init__(self, data: dict[str, Any], options: Options, out: IO[str]) -> None:
        session = data.get("session_id")
        if not isinstance(session, str):
            raise HookError("the hook input has no session_id")
        self.data = data
        self.options = options
        self.out = out
        self.folder = Folder(options.journal, session)

    @property
    def transcript(self) -> str:
        """The transcript's path (HookError when the input has none)."""
        path = self.data.get("transcript_path")
        if not isinstance(path, str) or not path:
            raise HookError("the hook input has no transcript_path")
        return path

    def context(self, event: str, text: str) -> str:
        """Give ``text`` to the agent as ``additionalContext`` of ``event``; what was given."""
        given = fit(text)
        output = {"hookEventName": event, "additionalContext": given}
        self.out.write(json.dumps({"hookSpecificOutput": output}) + "\n")
        return given

    def pre_compact(self) -> None:
        self.folder.make()
        self.folder.remove("compact")  # a block no SessionStart took is stale now
        self.folder.remove("given")
        if not self.options.tell_summarizer:
            start_worker("precompact", self.folder, self.transcript)
            return
        printed = run_worker("precompact", self.folder, self.transcript, self.options.wait)
        self.out.write(printed)

    def session_start(self) -> None:
        if self.data.get("source") != "compact":
            return
        if not wait_for(self.folder, "precompact", self.options.wait):
            raise HookError(f"the journal was not ready in {self.options.wait:g} s: no block")
        block = self.folder.take("compact")
        if block:  # PostCompact's worker judges the summary by it
            self.folder.write("given", self.context("SessionStart", block))

    def post_compact(self) -> None:
        self.folder.make()
        start_worker("postcompact", self.folder, self.transcript)

    def user_prompt_submit(self) -> None:
        wait_for(self.folder, "postcompact", min(self.options.wait, PROMPT_WAIT))
        block = self.folder.take("queue")
        if block:  # the worker the Stop hook starts looks for it in the transcript
            self.folder.write("told", self.context("UserPromptSubmit", block))

    def stop(self) -> None:
        """After a delivery (``told``, handed on as ``recording`` to one worker, which looks
        for it in the transcript) or during a compaction: ingest the transcript again."""
        compacting = _busy(self.folder.running, f"{self.folder.session}.busy-postcompact.")
        try:
            os.replace(self.folder.path("told"), self.folder.path("recording"))
        except FileNotFoundError:
            if not compacting:
                return
        start_worker("record", self.folder, self.transcript)

    def run(self) -> None:
        """Act on the event; tell standard error what the last worker could not do."""
        error = self.folder.take("error")
        if error:
            say(f"tierlog: {error.strip()}")
        actions: dict[str, Callable[[], None]] = {
            "PreCompact": self.pre_compact,
            "SessionStart": self.session_start,
            "PostCompact": self.post_compact,
            "UserPromptSubmit": self.user_prompt_submit,
            "Stop": self.stop,
            "SessionEnd": self.stop,
        }
        action = actions.get(str(self.data.get("hook_event_name")))
        if action is not None:
            action()


class Options:
    """The hook's command-line options."""

    def __init__(self, journal: str, tell_summarizer: bool = False, wait: float = 30.0) -> None:
        self.journal = journal
        self.tell_summarizer = tell_summarizer
        self.wait = wait

    @staticmethod
    def parse(argv: Sequence[str]) -> Options:
        """``--journal PATH [--tell-summarizer] [--wait SECONDS]`` (HookError otherwise)."""
        journal, tell, wait = None, False, 30.0
        rest = list(argv)
        while rest:
            flag = rest.pop(0)
            if flag == "--tell-summarizer":
                tell = True
            elif flag in ("--journal", "--wait") and rest:
                value = rest.pop(0)
                journal, wait = (value, wait) if flag == "--journal" else (journal, _seconds(value))
            else:
                raise HookError(f"unknown or incomplete option {flag!r}")
        if not journal:
            raise HookError("--journal PATH is required")
        return Options(os.path.abspath(journal), tell, wait)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise HookError(f"--wait: not a number of seconds: {text[:20]!r}") from None
    if not 0 <= value <= 3600:
        raise HookError(f"--wait: {text[:20]} is outside 0..3600")
    return value


def read_input(stream: IO[str]) -> dict[str, Any]:
    """The hook's JSON object (HookError when it is not one)."""
    text = stream.read(MAX_INPUT + 1)
    if len(text) > MAX_INPUT:
        raise HookError(f"the hook input is larger than {MAX_INPUT} characters")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HookError(f"the hook input is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HookError("the hook input is not a JSON object")
    return data


def say(line: str) -> None:
    """One line on standard error, never longer than a screen line or two."""
    text = " ".join(line.split())
    print(text if len(text) <= 300 else text[:297] + "...", file=sys.stderr)


def main(
    argv: Sequence[str] | None = None, stdin: IO[str] | None = None, out: IO[str] | None = None
) -> int:
    """Run the hook; always 0 (see the module doc)."""
    event = "?"
    try:
        options = Options.parse(sys.argv[1:] if argv is None else argv)
        data = read_input(stdin or _utf8(sys.stdin))
        event = str(data.get("hook_event_name"))[:40]
        Hook(data, options, out or _utf8(sys.stdout)).run()
    except BaseException as exc:  # never in the user's way, Ctrl-C included
        say(f"tierlog claude-code hook ({event}): {type(exc).__name__}: {exc}")
    return 0


def _utf8(stream: IO[str]) -> IO[str]:
    """``stream`` read or written as UTF-8, what Claude Code sends and reads whatever the
    locale (``python -I`` ignores PYTHONUTF8; a Latin-1 locale would garble a path)."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(encoding="utf-8")
    return stream


if __name__ == "__main__":
    sys.exit(main())
