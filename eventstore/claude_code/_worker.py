"""The journal work of tierlog's Claude Code hooks, in a process of its own.

``python -I -m eventstore.claude_code._worker EVENT --journal J --session S --transcript T``
is what :mod:`._hook` starts (and does not wait for), one at a time per session (a lock
file). The journal is written by the ingest alone, so a hooked session is exactly what
``tierlog ingest`` makes of the same transcript, re-tells included: Claude Code writes
every block a hook gave into the transcript (a ``hook_additional_context`` attachment),
and the ingest records it there (see ``_retold``).

- ``precompact``: ingest the transcript; write the block SessionStart gives
  (``<session>.compact``): every live obligation no summary or re-tell states (held by
  raw turns only, or owed already), since the summary cannot be read at SessionStart.
- ``postcompact``: wait until Claude Code has written the compaction (its boundary and
  summary), ingest the transcript up to it and what follows it before the agent's next
  reply (so no reply is read half-written); what the working context still owes is
  queued for the next prompt (``<session>.queue``).
- ``record``: ingest the transcript (after a delivery, at the end of the agent's turn).

Any failure is one line in ``<session>.error`` (the next hook prints it) and a
``hook_error`` note in the journal's ``claude-code-hooks`` session, which ``audit`` shows.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import attrs

from eventstore._journal import Journal
from eventstore._retell import HEADER, line_of, write_block
from eventstore._session import Session
from eventstore.claude_code._hook import MAX_CHARS, Folder, _busy, units
from eventstore.claude_code._ingest import CONFIG, ingest_as
from invariants import Owed, owed
from reducers import InvalidArgument, InvalidEvent, Noted, SessionState, in_spans

HOOKS_SESSION = "claude-code-hooks"
BOUNDARY_WAIT = 30.0  # seconds PostCompact's worker waits for Claude Code to write it
LOCK_WAIT = 300.0
POLL = 0.05
SUMMARIZER_HEADER = "tierlog: live obligations the summary must carry, one a line:"


def main(argv: Sequence[str] | None = None) -> int:
    """Do the work of one hook event (see the module doc); 0 even when it fails."""
    args = _parser().parse_args(argv)
    logging.getLogger("tierlog").setLevel(logging.ERROR)  # refusals are what it reports
    folder = Folder(args.journal, args.session)
    try:
        folder.make()
        regular_file(args.transcript)
        with _locked(folder), Journal(args.journal) as journal:
            _unusable(journal, folder)
            _deaths(journal, folder)
            printed = WORK[args.event](journal, folder, args.transcript)
        if args.print_live and printed:
            sys.stdout.write(printed + "\n")
    except BaseException as exc:  # reported, never raised at Claude Code
        _failed(folder, f"{args.event} for session {folder.session} ({args.transcript})", exc)
    finally:
        if args.busy:
            folder.remove(args.busy)
    return 0


def regular_file(path: str) -> None:
    """InvalidArgument unless ``path`` is a regular file: a FIFO would hang the worker,
    holding the session's lock, and ``/dev/zero`` never ends."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise InvalidArgument(f"{path}: not a regular file")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m eventstore.claude_code._worker")
    p.add_argument("event", choices=sorted(WORK))
    p.add_argument("--journal", required=True)
    p.add_argument("--session", required=True)
    p.add_argument("--transcript", required=True)
    p.add_argument("--print-live", action="store_true")
    p.add_argument("--busy", help="the pid file to remove when done (see _hook.start_worker)")
    return p


@contextmanager
def _locked(folder: Folder) -> Iterator[None]:
    """One worker at a time per session (InvalidArgument after LOCK_WAIT seconds)."""
    with open(folder.path("lock"), "a") as f:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise InvalidArgument("another hook worker held the session") from None
                time.sleep(POLL)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _failed(folder: Folder, what: str, exc: BaseException) -> None:
    """Keep the error for the next hook and note it in the journal (when it opens)."""
    text = f"{what}: {type(exc).__name__}: {exc}"
    text = " ".join(text.split())[:1000]
    with suppress(OSError):
        folder.write("error", text)
    with suppress(Exception):  # a journal that cannot be opened: the error file says it
        note(folder.journal, "hook_error", text)


def _unusable(journal: Journal, folder: Folder) -> None:
    """Note, once, that the pid files cannot go in ``running/`` (see ``_hook.Folder``): the
    hooks work on, listing the whole hook folder when they wait for a worker."""
    if not folder.unusable:
        return
    text = (
        f"{folder.unusable}: the hook workers' pid files are kept in {folder.root} itself"
        " (a hook that waits for a worker lists that whole folder); remove it, or make it a"
        " folder this user can write"
    )
    if journal.has_session(HOOKS_SESSION):
        said = {p for k, p in journal.recorder.read_payloads(HOOKS_SESSION) if k == "Noted"}
        if any(json.loads(p).get("text") == text for p in said):
            return
    _note(journal, "hook_error", text)


def _deaths(journal: Journal, folder: Folder) -> None:
    """Note each worker of the session that died before it finished (see ``_hook._busy``):
    what it was to do (a block, a queue) was not done."""
    prefix = f"{folder.session}.died-"
    _older(folder, prefix)
    try:
        names = sorted(n for n in os.listdir(folder.running) if n.startswith(prefix))
    except FileNotFoundError:  # no worker has run since the folder was made
        return
    for name in names:
        event = name[len(prefix) :].split(".")[0]
        pid = (folder.read(name[len(folder.session) + 1 :]) or "?").strip()
        text = f"the {event} worker of session {folder.session} (pid {pid}) ended before it"
        _note(journal, "hook_error", f"{text} finished (killed, or out of memory)")
        folder.remove(name[len(folder.session) + 1 :])


def _older(folder: Folder, prefix: str) -> None:
    """Move the pid files of dead workers an older tierlog left in the hook folder itself
    (before ``running/``) into ``running/``, so that their deaths are noted too (a worker
    of the upgrade's time still running is left alone: it removes its own file)."""
    _busy(folder.root, f"{folder.session}.busy-")  # a dead one's file becomes died-
    with suppress(FileNotFoundError):
        for name in os.listdir(folder.root):
            if name.startswith(prefix):
                with suppress(FileNotFoundError):
                    os.replace(os.path.join(folder.root, name), os.path.join(folder.running, name))


def note(journal_path: str, kind: str, text: str) -> None:
    """A note in the journal's ``claude-code-hooks`` session (started on first use)."""
    with Journal(journal_path) as journal:
        _note(journal, kind, text)


def _note(journal: Journal, kind: str, text: str) -> None:
    if not journal.has_session(HOOKS_SESSION):
        journal.start_session(HOOKS_SESSION, CONFIG)
    journal.session(HOOKS_SESSION).extend([Noted(kind=kind, text=text)])


# -- the work --------------------------------------------------------------------------
def precompact(journal: Journal, folder: Folder, transcript: str) -> str:
    """Ingest the transcript, then write the block SessionStart gives; returns the live
    obligations for the summarizer (printed only with ``--tell-summarizer``)."""
    size = _ingest_file(journal, folder, transcript)
    folder.write("ingested", str(size))
    session = journal.session(folder.session)
    risky = at_risk(session.state)
    if long := too_long(session, risky):
        keys = "; ".join(o.key for o in long)[:300]
        text = f"session {folder.session}: {len(long)} obligation(s) too long for a block"
        _note(journal, "retell_skipped", f"{text} of {MAX_CHARS} characters: {keys}")
        risky = [o for o in risky if o not in long]
    block = block_of(session, risky)
    if block:
        folder.write("compact", block)
    live = [o for o in _unstated(session.state) if o.status != "superseded"]
    return block_of(session, live, header=SUMMARIZER_HEADER)


def postcompact(journal: Journal, folder: Folder, transcript: str) -> str:
    """Ingest the compaction Claude Code is writing (up to its summary), then queue what
    the working context still owes, unless the block SessionStart gave states it all: the
    next ingest records that block (it comes after the summary) as the re-tell."""
    given = folder.take("given")
    first_entry(transcript)  # not a transcript at all: say so now, not after the wait
    end = wait_for_compaction(transcript, int(folder.read("ingested") or 0), BOUNDARY_WAIT)
    with tempfile.TemporaryDirectory(dir=folder.root) as scratch:
        prefix = Path(scratch) / Path(transcript).name
        with open(transcript, "rb") as f:
            prefix.write_bytes(f.read(end))
        ingest_as(journal, prefix, folder.session, reviews=False)
    folder.write("ingested", str(end))
    session = journal.session(folder.session)
    if given:
        folder.write("told", given)  # the Stop or SessionEnd hook has it ingested
    if given and states_all_owed(session, given):
        folder.remove("queue")
    else:
        _queue(folder, session)
    return ""


def record(journal: Journal, folder: Folder, transcript: str) -> str:
    """Ingest the transcript (the blocks given are in it now); queue what is still owed,
    unless the block last given is not in the transcript: Claude Code did not record it,
    so what it stated would stay owed and be given again at every prompt. That is noted
    (``retell_unrecorded``) and nothing is queued: the next compaction's hooks give what
    it drops."""
    told = folder.take("recording")  # the block the Stop hook handed on (see _hook.stop)
    folder.write("ingested", str(_ingest_file(journal, folder, transcript)))
    if told and not recorded(transcript, told):
        folder.remove("queue")
        text = f"session {folder.session}: the block given ({len(told)} characters) is not"
        text += f" in {transcript}: not recorded as a re-tell, and not given again"
        _note(journal, "retell_unrecorded", text)
        return ""
    _queue(folder, journal.session(folder.session))
    return ""


def recorded(transcript: str, block: str) -> bool:
    """Whether the transcript holds ``block`` as a JSON string's text (Claude Code writes
    the context a hook gave into an attachment)."""
    with open(transcript, "rb") as f:
        data = f.read()
    return any(
        json.dumps(block, ensure_ascii=plain)[1:-1].encode() in data for plain in (True, False)
    )


def _queue(folder: Folder, session: Session) -> None:
    """The re-tell block the next prompt delivers: what the working context owes."""
    block = fitting(lambda limit: _due(session, limit))
    if block:
        folder.write("queue", block)
    else:
        folder.remove("queue")


def _due(session: Session, limit: int) -> str:
    due = session.retell(max_chars=limit, dry_run=True)
    return "" if due is None else due.content


def fitting(write: Callable[[int], str]) -> str:
    """``write(limit)`` (a block of at most ``limit`` characters, whole lines) for the
    largest limit whose block Claude Code counts within MAX_CHARS: it counts UTF-16
    units, so each emoji or other astral character leaves one character less."""
    limit = MAX_CHARS
    while (excess := units(text := write(limit)) - MAX_CHARS) > 0:
        limit -= excess
    return text


def states_all_owed(session: Session, block: str) -> bool:
    """Whether ``block`` states every line of the re-tell the journal owes now (cut to its
    length): ingested, it is recorded as that re-tell (see ``_ingest._retell``)."""
    try:
        due = session.retell(max_chars=len(block), dry_run=True)
    except InvalidArgument:
        return False
    return due is None or set(due.content.splitlines()) <= set(block.splitlines())


WORK: dict[str, Callable[[Journal, Folder, str], str]] = {
    "precompact": precompact,
    "postcompact": postcompact,
    "record": record,
}


def _ingest_file(journal: Journal, folder: Folder, transcript: str) -> int:
    """Ingest the transcript (only what it gained, when the journal says where the last
    ingest got to) as the folder's session (InvalidEvent if it is another's); its size
    when it was read."""
    size = os.path.getsize(transcript)
    ingest_as(journal, transcript, folder.session, reviews=False)
    return size


# -- what is at risk -------------------------------------------------------------------
def _unstated(state: SessionState) -> tuple[Owed, ...]:
    """Every live obligation no live summary node carries, as ``owed`` words it: owed as
    if every turn (re-tells too) had left the working context."""
    everything = ((0, state.turns),) if state.turns else ()
    return owed(attrs.evolve(state, withdrawn=everything))


def at_risk(state: SessionState) -> list[Owed]:
    """What a compaction may drop that the context before it states only in raw turns:
    the live obligations no summary node carries and no resident re-tell states
    (superseded attempts aside), in ``owed``'s order."""
    owed_now = {(o.kind, o.key) for o in owed(state)}
    return [
        o
        for o in _unstated(state)
        if o.status != "superseded" and ((o.kind, o.key) in owed_now or _raw(state, o.position))
    ]


def _raw(state: SessionState, position: int) -> bool:
    return state.turns > 0 and not in_spans(state.evicted, position)


def too_long(session: Session, found: Sequence[Owed]) -> list[Owed]:
    """The obligations whose line alone does not fit a block (a rule the user pasted as
    one long paragraph): in a block's first place they would leave it empty."""
    quotes = _quotes(session, found)
    return [
        o
        for o in found
        if len(HEADER) + 1 + units(line_of(o, None if o.turn is None else quotes.get(o.turn)))
        > MAX_CHARS
    ]


def _quotes(session: Session, found: Sequence[Owed]) -> dict[int, str]:
    turns = sorted({o.turn for o in found if o.turn is not None})
    return {t: session.turns(t, t + 1)[0].content for t in turns}


def block_of(session: Session, found: Sequence[Owed], header: str | None = None) -> str:
    """The re-tell block stating ``found`` (lines as ``retell`` writes them), cut at
    MAX_CHARS; empty when there is nothing to state."""
    if not found:
        return ""
    quotes = _quotes(session, found)
    try:
        text = fitting(lambda limit: write_block(found, quotes, limit).text)
    except InvalidArgument:  # not even the first line fits: say so in the journal
        return ""
    return text if header is None else header + text[text.index("\n") :]


# -- waiting for Claude Code -------------------------------------------------------------
def wait_for_compaction(transcript: str, after: int, seconds: float) -> int:
    """Where to cut the transcript once Claude Code has written a compaction past byte
    ``after``: the end of its summary. InvalidArgument when none comes in ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        with open(transcript, "rb") as f:  # what the last ingest read ends with a line
            f.seek(after)
            cut = compaction_end(f.read(), 0)
        if cut is not None:
            return after + cut
        if time.monotonic() > deadline:
            raise InvalidArgument(f"no compaction in {transcript} after {seconds:g} s")
        time.sleep(POLL)


def compaction_end(data: bytes, after: int) -> int | None:
    """See :func:`wait_for_compaction`: ``None`` while it is not written whole. What
    follows the summary (the agent's next reply, which Claude Code may be writing) is
    left to a later ingest."""
    at = data.rfind(b'"compact_boundary"')
    while at >= after:
        start = data.rfind(b"\n", 0, at) + 1
        if _entry(data, start).get("subtype") == "compact_boundary":
            return _summary_end(data, start)
        at = data.rfind(b'"compact_boundary"', after, start)
    return None


def _summary_end(data: bytes, start: int) -> int | None:
    at = start
    while (end := data.find(b"\n", at)) >= 0:
        entry = _entry(data, at)
        if entry.get("isCompactSummary") is True:
            return end + 1
        if entry.get("type") == "assistant":
            return None  # a reply before the summary: not Claude Code's order; wait it out
        at = end + 1
    return None


def first_entry(transcript: str) -> dict[str, object]:
    """The transcript's first line as a JSON object; InvalidEvent if it is not one."""
    with open(transcript, "rb") as f:
        head = f.readline(2**20)
    entry = _entry(head, 0)
    if not entry:
        raise InvalidEvent(f"{transcript}: line 1 is not a Claude Code transcript entry")
    return entry


def _entry(data: bytes, start: int) -> dict[str, object]:
    end = data.find(b"\n", start)
    try:
        value = json.loads(data[start : end if end >= 0 else len(data)])
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


if __name__ == "__main__":
    sys.exit(main())
