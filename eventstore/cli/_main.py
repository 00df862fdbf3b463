"""``tierlog``: a thin command line over the library.

Exit codes: 0 fine, 1 findings (``verify``, ``audit``; a corrupt database is one),
2 usage or bad input (Ctrl-C included), 3 an internal error (a bug: one line, and
the traceback with ``-vv``). No exception escapes as a traceback otherwise.
The library never configures logging; this module does (``--log-format``, ``-v``).

Start-up is part of the interface (a Claude Code hook runs ``tierlog`` on every prompt;
``--help`` is the first thing a new user types): this module imports the standard
library, the terminal helpers and nothing of the journal. Each command imports what it
uses when it runs; ``tests/test_layers.py`` (``TestColdStart``) keeps it so.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventstore._location import check_location, is_url, redact_text
from eventstore._logging import on_first_use
from eventstore.cli import _claude_code
from eventstore.cli._terminal import json_safe, printable, say, warn

if TYPE_CHECKING:
    from eventstore._journal import Journal
    from eventstore._ops import Finding, SessionHead

Handler = Callable[[argparse.Namespace], int]

_COMMANDS: list[tuple[str, str, str, Callable[[argparse.ArgumentParser], None]]] = []


def command(name: str, summary: str, example: str) -> Callable[[Handler], Handler]:
    """Register a subcommand with its one-line summary and a usage example."""

    def register(handler: Handler) -> Handler:
        def setup(p: argparse.ArgumentParser) -> None:
            p.set_defaults(handler=handler)
            for add in getattr(handler, "_arguments", ()):
                add(p)

        _COMMANDS.append((name, summary, example, setup))
        return handler

    return register


def arg(*names: str, **kwargs: Any) -> Callable[[Handler], Handler]:
    """Declare an argument of the decorated subcommand."""

    def declare(handler: Handler) -> Handler:
        handler._arguments = [  # type: ignore[attr-defined]
            lambda p: p.add_argument(*names, **kwargs),
            *getattr(handler, "_arguments", ()),
        ]
        return handler

    return declare


DB = "journal file, or a postgresql:// URL"
INGEST_FORMATS = ("claude-code", "codex")  # claude_code.FORMATS and Codex's rollouts
SHIP_CHUNK = 10_000  # _ops.CHUNK, written out: the frame imports no journal code


def open_journal(location: str, *, readonly: bool = False) -> Journal:
    """The one way the CLI opens a journal: a file path or a postgresql:// URL."""
    from eventstore._journal import Journal

    return Journal(location, readonly=readonly)


def _reader(args: argparse.Namespace) -> Journal:
    return open_journal(args.db, readonly=True)


def _session_ids(journal: Journal, session_id: str | None) -> list[str] | None:
    """``[session_id]`` if it names a session of the journal; ``None`` (all) if not given."""
    if session_id is None:
        return None
    if not journal.has_session(session_id):
        from reducers import InvalidEvent

        raise InvalidEvent(f"no session {session_id!r} in {journal.recorder.location}")
    return [session_id]


MAX_VERSION = 2**62


def _version(text: str) -> int:
    """An argparse type: a version number in ``0..2**62``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a version number: {text[:40]!r}") from None
    if not 0 <= value <= MAX_VERSION:
        raise argparse.ArgumentTypeError(f"version {text[:40]} is outside 0..2**62")
    return value


def _jobs(text: str) -> int:
    """An argparse type: a number of worker processes in ``1..256``."""
    if not text.isdigit() or not 1 <= int(text) <= 256:
        raise argparse.ArgumentTypeError(f"--jobs takes a number from 1 to 256, not {text[:40]!r}")
    return int(text)


def _amount(kind: type[int] | type[float]) -> Callable[[str], float]:
    """An argparse type: a number >= 0 (0 means no limit)."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text[:40]!r}") from None
        if not 0 <= value < 2**40:
            raise argparse.ArgumentTypeError(f"{text[:40]} is outside 0..2**40")
        return value

    return parse


def _corruption(exc: Exception) -> Finding:
    """``exc`` as a finding if it says the database is corrupt; else ``exc`` is re-raised."""
    from eventstore._errors import IntegrityError, is_corruption
    from eventstore._ops import Finding
    from reducers import JournalError

    if not isinstance(exc, IntegrityError) and not is_corruption(exc):
        raise exc
    problem = str(exc) if isinstance(exc, JournalError) else f"database is corrupt: {exc}"
    return Finding(check="integrity", session_id=None, version=None, problem=problem)


# -- commands ---------------------------------------------------------------------------
@command(
    "demo",
    "replay the two SPEC incidents against a fresh journal",
    "tierlog demo --db /tmp/tierlog-demo.db",
)
@arg("--db", default="tierlog-demo.db", help="journal to (re)create (default: %(default)s)")
def _demo(args: argparse.Namespace) -> int:
    from eventstore.cli._demo import run_demo

    if not args.verbose:  # the refusals are the point of the demo: no warning lines
        logging.getLogger("tierlog").setLevel(logging.ERROR)
    run_demo(args.db, print)
    return 0


@command(
    "sessions",
    "sessions with event counts, refusals, invalidations",
    "tierlog sessions agent.db --json",
)
@arg("db", help=DB)
@arg("--json", action="store_true", help="print JSON")
def _sessions(args: argparse.Namespace) -> int:
    import attrs

    from eventstore.cli import _output as out

    with _reader(args) as journal:
        rows = [attrs.asdict(s) for s in journal.recorder.summaries()]
    out.emit(rows, args.json)
    return 0


@command(
    "log", "the events of a session, one a line", "tierlog log agent.db mig-42 --from 10 --to 20"
)
@arg("db", help=DB)
@arg("session", help="session id")
@arg("--from", type=_version, dest="start", default=1, metavar="V", help="first version")
@arg("--to", type=_version, dest="stop", metavar="V", help="last version")
@arg("--json", action="store_true", help="print JSON Lines")
def _log(args: argparse.Namespace) -> int:
    from eventstore.cli import _output as out
    from eventstore.cli._walk import checked_rows

    with _reader(args) as journal:
        journal.session(args.session)
        rows = checked_rows(journal, args.session, args.start, args.stop)
        for row in rows:
            say(out.log_line(row, args.json))
    if rows.broken is not None:  # every row was shown; the first bad one is a finding
        warn("log", str(rows.broken))
        return 1
    return 0


@command(
    "state", "reduced tier state and its sha256", "tierlog state agent.db mig-42 --at 17 --json"
)
@arg("db", help=DB)
@arg("session", help="session id")
@arg("--at", type=_version, metavar="V", help="state after version V (default: latest)")
@arg("--json", action="store_true", help="print the canonical state as JSON")
def _state(args: argparse.Namespace) -> int:
    from eventstore.cli import _output as out

    with _reader(args) as journal:
        s = journal.session(args.session)
        state = s.state if args.at is None else s.state_at(args.at)
        if args.json:
            print(json.dumps({**state.to_json(), "sha256": state.sha256}, indent=2, sort_keys=True))
        else:
            say(out.describe_state(state))
    return 0


@command(
    "diff", "what changed in the state between two versions", "tierlog diff agent.db mig-42 10 17"
)
@arg("db", help=DB)
@arg("session", help="session id")
@arg("v1", type=_version, help="earlier version")
@arg("v2", type=_version, help="later version")
@arg("--json", action="store_true", help="print JSON")
def _diff(args: argparse.Namespace) -> int:
    from eventstore.cli import _output as out

    with _reader(args) as journal:
        s = journal.session(args.session)
        changes = out.diff(s.state_at(args.v1).to_json(), s.state_at(args.v2).to_json())
    if args.json:
        print(json.dumps(changes, indent=2, sort_keys=True))
    else:
        say("\n".join(out.diff_lines(changes)) or "no change")
    return 0


@command(
    "verify",
    "hash chains, payloads, spill files, every decision re-derived by replay",
    "tierlog verify agent.db mig-42 --witness mig-42.head.json",
)
@arg("db", help=DB)
@arg("session", nargs="?", help="one session (default: all)")
@arg("--witness", metavar="FILE", help="heads saved by `tierlog head --json`: each must still hold")
@arg("--json", action="store_true", help="print JSON")
@arg(
    "--clean",
    action="store_true",
    help="remove orphan spill files (a crash between writing a spill and committing it)",
)
@arg(
    "--jobs",
    type=_jobs,
    default=1,
    metavar="N",
    help="verify the sessions in N processes (the same findings, in the same order)",
)
def _verify(args: argparse.Namespace) -> int:
    import attrs

    from eventstore._errors import IntegrityError
    from eventstore._journal import Journal
    from eventstore._ops import clean_spills, read_witness
    from eventstore.cli._files import read_text

    witness = read_witness(read_text(args.witness), args.witness) if args.witness else None
    try:
        with _reader(args) as journal:
            findings = _verify_or_corrupt(journal, args, witness)
    except IntegrityError as exc:  # too damaged to open
        findings = [_corruption(exc)]
    if args.clean:  # orphans are notes: exit 0 unless something else is wrong
        try:
            with Journal(args.db) as journal:
                findings = [f for f in findings if f.check != "orphan"] + clean_spills(journal)
        except IntegrityError:  # a file no writer opens: its findings say why, nothing is cleaned
            pass
    fatal = any(f.fatal for f in findings)
    if args.json:
        print(json.dumps([attrs.asdict(f) for f in findings], indent=2))
    else:
        ok = [] if fatal else ["ok: every chain, payload, spill and decision verified"]
        say("\n".join([*map(str, findings), *ok]))
    return 1 if fatal else 0


def _verify_or_corrupt(
    journal: Journal, args: argparse.Namespace, witness: list[SessionHead] | None
) -> list[Finding]:
    """verify's findings; on a corrupt page, what ``PRAGMA integrity_check`` says instead."""
    import attrs

    try:
        return _verify_journal(journal, args, witness)
    except Exception as exc:  # re-raised unless it is corruption
        found = _corruption(exc)
    try:
        problems = journal.recorder.integrity_problems()
    except Exception:  # too damaged even for the check: the finding says so
        return [found]
    return [attrs.evolve(found, problem=p) for p in problems] + [found]


def _verify_journal(
    journal: Journal, args: argparse.Namespace, witness: list[SessionHead] | None
) -> list[Finding]:
    """verify's findings, then the witness's (a witnessed session may be missing altogether)."""
    from eventstore._ops import Reopen, check_witness, verify
    from eventstore.cli import _output as out
    from reducers import InvalidEvent

    session_id = args.session
    if session_id is not None and witness is not None:
        witness = [w for w in witness if w.session_id == session_id]
        if not witness:
            raise InvalidEvent(f"the witness holds no head for session {session_id!r}")
        if not journal.has_session(session_id):
            return check_witness(journal, witness)
    ids = _session_ids(journal, session_id)
    with out.Progress("verifying") as show:
        findings = verify(journal, ids, progress=show, jobs=args.jobs, reopen=Reopen(args.db))
    return findings + check_witness(journal, witness or [])


@command(
    "head",
    "each session's head version and hash: a witness to keep elsewhere",
    "tierlog head agent.db --json > agent.head.json",
)
@arg("db", help=DB)
@arg("session", nargs="?", help="one session (default: all)")
@arg("--json", action="store_true", help="print JSON (what `verify --witness` reads)")
def _head(args: argparse.Namespace) -> int:
    import attrs

    from eventstore._ops import heads

    with _reader(args) as journal:
        found = heads(journal, _session_ids(journal, args.session))
    if args.json:
        print(json.dumps([attrs.asdict(h) for h in found], indent=2))
    else:
        width = max((len(h.session_id) for h in found), default=0)
        say("\n".join(f"{h.session_id:<{width}}  {h.version:>8}  {h.hash}" for h in found))
    return 0


@command(
    "owed",
    "the re-tell block of what the working context owes (exit 1 when something is owed)",
    "tierlog owed agent.db mig-42 --max-chars 2000 --json",
)
@arg("db", help=DB)
@arg("session", help="session id")
@arg("--max-chars", type=_amount(int), metavar="N", help="cut the block at N chars (0: no limit)")
@arg("--json", action="store_true", help="print JSON: every owed obligation and the block")
@arg("--record", action="store_true", help="append the block as a re-tell turn (a write)")
def _owed(args: argparse.Namespace) -> int:
    from eventstore._retell import owed_json

    limit = int(args.max_chars) if args.max_chars else None
    if args.record:  # a missing journal or session is bad input: nothing is created
        with open_journal(args.db, readonly=True) as journal:
            journal.session(args.session)
    with open_journal(args.db, readonly=not args.record) as journal:
        s = journal.session(args.session)
        # what is owed is what the re-tell decided on (another writer may have re-told)
        told = s.retell(limit, dry_run=not args.record)
        found = () if told is None else told.told + told.still_owed
    if args.json:
        print(json_safe(json.dumps(owed_json(found, told), indent=2, ensure_ascii=False)))
    elif told is not None:
        say(told.content)
    return 1 if found else 0


@command(
    "audit",
    "refusals, invalidations, raw fallbacks and evicted obligations",
    "tierlog audit agent.db --json",
)
@arg("db", help=DB)
@arg("session", nargs="?", help="one session (default: all)")
@arg("--json", action="store_true", help="print JSON")
def _audit(args: argparse.Namespace) -> int:
    import attrs

    from eventstore._ops import audit
    from eventstore.cli import _output as out

    try:
        with _reader(args) as journal:
            report = audit(journal, _session_ids(journal, args.session))
    except Exception as exc:  # re-raised unless it is corruption
        warn("audit", str(_corruption(exc)))
        return 1
    if args.json:
        print(json.dumps(attrs.asdict(report), indent=2, sort_keys=True))
    else:
        say(out.audit_text(report))
    return 1 if report.findings else 0


@command(
    "sql",
    "run a query on a read-only connection, within a time and a memory limit",
    'tierlog sql agent.db "SELECT * FROM compaction_refusals" --timeout 30',
)
@arg("db", help=DB)
@arg("query", help="SQL (the audit views: turns, compactions, markers, ...)")
@arg("--json", action="store_true", help="print JSON")
@arg(
    "--timeout",
    type=_amount(float),
    default=30.0,
    metavar="SECONDS",
    help="stop the query after this long (0: no limit; default: %(default)s)",
)
@arg(
    "--max-memory",
    type=_amount(int),
    default=256,
    metavar="MB",
    help="SQLite's memory limit for the query, its temporary storage included (PRAGMA"
    " hard_heap_limit; 0: none; default: %(default)s)",
)
@arg(
    "--max-rows",
    type=_amount(int),
    default=1_000_000,
    metavar="N",
    help="print at most N rows, then stop with a message (0: no limit; default: %(default)s)",
)
@arg(
    "--max-bytes",
    type=_amount(float),
    default=1024,
    metavar="MB",
    help="print at most this many MB, then stop with a message (0: no limit; default: %(default)s)",
)
def _sql(args: argparse.Namespace) -> int:
    from eventstore._logging import bound
    from eventstore.cli import _output as out

    limits = {"timeout": args.timeout or None, "heap_limit": int(args.max_memory * 2**20) or None}
    caps = out.Caps(rows=int(args.max_rows), bytes=int(args.max_bytes * 2**20))
    with _reader(args) as journal:
        bound(logging.getLogger("tierlog")).debug("query", **limits)
        with journal.recorder.query(args.query, **limits) as result:
            stopped = out.stream(result, args.json, caps=caps)
    if stopped is not None:
        warn("sql", stopped)
        return 2
    return 0


ALLOW_FINDINGS = "carry a session that does not verify, its findings recorded with it"


@command(
    "export",
    "write a session as JSON Lines, its trailer last",
    "tierlog export agent.db mig-42 -o mig-42.jsonl",
)
@arg("db", help=DB)
@arg("session", help="session id")
@arg("-o", "--output", metavar="FILE", help="file to write, whole or not at all (default: stdout)")
@arg("--allow-findings", action="store_true", help=f"{ALLOW_FINDINGS} (in the trailer)")
def _export(args: argparse.Namespace) -> int:
    from eventstore._ops import export_lines
    from eventstore.cli._files import written

    with _reader(args) as journal:
        lines = export_lines(journal, args.session, allow_findings=args.allow_findings)
        first = next(lines)  # the session is checked before anything is written
        if args.output:
            with written(args.output) as f:
                f.writelines((line + "\n").encode() for line in itertools.chain([first], lines))
        else:
            for line in itertools.chain([first], lines):
                sys.stdout.write(json_safe(line) + "\n")
    return 0


@command(
    "import",
    "read JSON Lines back through the same checks",
    "tierlog import fresh.db mig-42.jsonl --session mig-42-copy",
)
@arg("db", help=f"{DB} (created if missing)")
@arg("file", help="JSON Lines from `tierlog export`")
@arg("--session", dest="rename", metavar="ID", help="import the file's one session as ID")
@arg("--allow-findings", action="store_true", help=f"{ALLOW_FINDINGS} (as notes audit lists)")
@arg(
    "--no-trailer",
    action="store_true",
    help="read a file without trailers (an export of tierlog 0.2): a file cut short"
    " cannot be told from a whole one",
)
def _import(args: argparse.Namespace) -> int:
    from eventstore._journal import check_session_id
    from eventstore._ops import Import, created_journal, read_file
    from eventstore.cli import _output as out
    from eventstore.cli._files import open_regular
    from reducers import InvalidArgument

    if args.rename is not None:
        check_session_id(args.rename)
    try:
        with open_regular(args.file) as handle:
            found = read_file(handle, require_trailer=not args.no_trailer)
    except OSError as exc:
        raise InvalidArgument(f"cannot read {args.file}: {exc.strerror}") from None
    sessions = {sid: list(f.events) for sid, f in found.items()}
    with contextlib.ExitStack() as stack:
        exists = is_url(args.db) or Path(args.db).exists()
        existing = stack.enter_context(open_journal(args.db)) if exists else None
        job = Import(
            args.db,
            sessions,
            rename=args.rename,
            findings={sid: f.findings for sid, f in found.items()},
            allow_findings=args.allow_findings,
            untrailed=frozenset(sid for sid, f in found.items() if not f.trailer),
        )
        stack.enter_context(job)
        with out.Progress("importing command") as show:
            job.decide(existing, show)  # without the journal's write lock
        results = job.commit(existing or stack.enter_context(created_journal(args.db)))
    untrailed = {sid for sid, f in found.items() if not f.trailer}
    say("\n".join(out.import_lines(r, r.source_id in untrailed) for r in results))
    return 0


@command(
    "report",
    "one self-contained HTML file: the timeline of tiers, refusals and markers, and the audit",
    "tierlog report agent.db mig-42 --at 17 -o mig-42.html",
)
@arg("db", help=DB)
@arg("session", nargs="?", help="one session (default: every session, with the sessions list)")
@arg("--at", type=_version, metavar="V", help="the version shown first (default: latest)")
@arg("-o", "--output", metavar="FILE", help="file to write (default: DB stem.html; - for stdout)")
def _report(args: argparse.Namespace) -> int:
    from eventstore._report import collect, render
    from eventstore.cli._files import written

    with _reader(args) as journal:
        if args.session is not None:
            _session_ids(journal, args.session)
        report = collect(journal, args.session, args.at)
    page = render(report)
    if args.output == "-":  # the page says utf-8: its bytes are, whatever the terminal's
        sys.stdout.flush()
        sys.stdout.buffer.write(page.encode("utf-8"))
        sys.stdout.buffer.flush()
    else:
        stem = "journal" if is_url(args.db) else Path(args.db).stem
        default = stem + (f"-{args.session}" if args.session else "") + ".html"
        target = Path(args.output or default)
        data = page.encode("utf-8")
        with written(target) as f:
            f.write(data)
        say(f"wrote {target} ({len(data):,} bytes)")
    for p in report.broken:  # drawn with a warning on the page; a finding here
        warn(
            "report",
            f"session {p.session_id!r} does not verify: its hash chain breaks"
            f" at v{p.version} ({p.problem}); the page says so. See tierlog verify.",
        )
    return 1 if report.broken else 0


@command(
    "spill",
    "print a spill's bytes, checked against their recorded sha256",
    "tierlog spill agent.db mig-42 9c/9c41e0...d2.spill > turns.jsonl",
)
@arg("db", help=DB)
@arg("session", help="session id")
@arg("handle", help="the spill's handle (tierlog sql DB 'SELECT handle FROM spills')")
def _spill(args: argparse.Namespace) -> int:
    from eventstore._errors import IntegrityError

    with _reader(args) as journal:
        try:
            data = journal.read_spill(args.session, args.handle)
        except IntegrityError as exc:  # the bytes are not the recorded ones: a finding
            warn("spill", str(exc))
            return 1
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return 0


@command(
    "ingest",
    "real agent transcripts as sessions, their compactions and markers checked",
    "tierlog ingest agent.db ~/.claude/projects/my-project/*.jsonl && tierlog audit agent.db",
)
@arg("db", help=f"{DB} (created if missing)")
@arg("files", nargs="+", metavar="FILE", help="transcripts, one session each")
@arg(
    "--format",
    choices=INGEST_FORMATS,
    help="transcript format (default: detected; a Codex rollout starts with session_meta)",
)
@arg("--json", action="store_true", help="print JSON")
def _ingest(args: argparse.Namespace) -> int:
    from eventstore.cli._ingest import ingest

    if not args.verbose:  # refused markers are the point: they are reported below
        logging.getLogger("tierlog").setLevel(logging.ERROR)
    return ingest(args.db, args.files, args.format, args.json)


def _chunk(text: str) -> int:
    """An argparse type: events per transaction (``require_chunk``)."""
    from eventstore._ops import require_chunk
    from reducers import InvalidArgument

    try:
        return require_chunk(int(text))
    except (ValueError, InvalidArgument) as exc:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: {exc}") from None


@command(
    "ship",
    "copy the events and spills DEST lacks from SRC, verbatim (resumable)",
    "tierlog ship agent.db 'postgresql://tierlog@db.internal/fleet'",
)
@arg("src", help=f"{DB} to read")
@arg("dest", help=f"{DB} to append to (created if missing)")
@arg("--session", metavar="ID", help="ship only this session")
@arg("--chunk", type=_chunk, default=SHIP_CHUNK, metavar="N", help="events a commit (%(default)s)")
@arg("--allow-findings", action="store_true", help=f"{ALLOW_FINDINGS} (verbatim)")
@arg("--json", action="store_true", help="print JSON")
def _ship(args: argparse.Namespace) -> int:
    import attrs

    from eventstore._ops import ship
    from eventstore.cli import _output as out

    with open_journal(args.src, readonly=True) as src:
        ids = _session_ids(src, args.session)  # checked before DEST is created
        with open_journal(args.dest) as dest, out.Progress("shipping") as show:
            results = ship(
                src, dest, ids, chunk=args.chunk, progress=show, allow_findings=args.allow_findings
            )
    if args.json:
        print(json.dumps([attrs.asdict(r) for r in results], indent=2))
    else:
        say("\n".join(map(str, results)) or "nothing to ship: the source has no session")
    return 1 if any(r.problem for r in results) else 0


# -- entry point ------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The ``tierlog`` argument parser, every subcommand with help and an example."""
    parser = argparse.ArgumentParser(
        prog="tierlog",
        description="Event-sourced journal for agent context compaction.",
        epilog="example:\n  tierlog demo && tierlog audit tierlog-demo.db",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--log-format",
        choices=("console", "json"),
        default="console",
        help="how log lines on standard error look",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, summary, example, setup in _COMMANDS:
        p = subs.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=f"example:\n  {example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        setup(p)
    _claude_code.add(subs)
    return parser


def configure_logging(fmt: str, verbose: int) -> None:
    """Route structlog through stdlib logging to standard error (structlog itself is
    configured when the first line is logged: a command that logs nothing never loads it)."""
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    handler = logging.StreamHandler(sys.stderr)
    root = logging.getLogger("tierlog")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
    on_first_use(lambda: _configure_structlog(fmt))


def _configure_structlog(fmt: str) -> None:
    """structlog's processors: level, time, scrubbed texts, then console or JSON."""
    import structlog

    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            _scrub_json if fmt == "json" else _scrub_console,
            renderer,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


Log = MutableMapping[str, Any]


def _scrub_console(_: object, __: str, event: Log) -> Log:
    """A log line's texts with URL secrets hidden and control characters escaped."""
    return {key: _scrubbed(value, printable) for key, value in event.items()}


def _scrub_json(_: object, __: str, event: Log) -> Log:
    """A log line's texts with URL secrets hidden (JSON escapes the rest itself)."""
    return {key: _scrubbed(value, redact_text) for key, value in event.items()}


def _scrubbed(value: object, scrub: Callable[[str], str]) -> object:
    """``value`` with ``scrub`` applied to each text in it (in lists and mappings too)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, (list, tuple)):
        return [_scrubbed(v, scrub) for v in value]
    if isinstance(value, dict):
        return {k: _scrubbed(v, scrub) for k, v in value.items()}
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tierlog`` with ``argv``; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    configure_logging(args.log_format, args.verbose)
    try:
        _check_locations(args)
        return int(args.handler(args))
    except (Exception, KeyboardInterrupt) as exc:
        return _failed(args, exc)


def _check_locations(args: argparse.Namespace) -> None:
    """Every journal argument, before anything is opened or created: a URL tierlog
    does not open, or a file that is a FIFO, a device or a folder, is bad input."""
    for name in ("db", "src", "dest"):
        location = getattr(args, name, None)
        if isinstance(location, str):
            check_location(location)
            if not is_url(location):
                from eventstore.cli._files import check_regular

                check_regular(location, "open")


def _failed(args: argparse.Namespace, exc: BaseException) -> int:
    """One line on standard error for ``exc``, and the exit code it means."""
    from eventstore._errors import ChainBroken, is_corruption, is_database_fault
    from eventstore._ops import NotVerified
    from reducers import JournalError

    if isinstance(exc, BrokenPipeError):  # `tierlog log ... | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    code, message = 2, str(exc)
    if isinstance(exc, (NotVerified, ChainBroken)):  # a finding, as verify's are
        code = 1
    elif isinstance(exc, KeyboardInterrupt):
        message = "interrupted"
    elif isinstance(exc, OSError) and exc.filename is not None:
        message = f"{exc.filename}: {exc.strerror}"  # a file on the command line
    elif is_database_fault(exc):
        message = f"database {'is corrupt' if is_corruption(exc) else 'error'}: {exc}"
    elif not isinstance(exc, (JournalError, OSError)):
        code, message = 3, f"internal error: {type(exc).__name__}: {exc} (a bug; -vv shows where)"
        if args.verbose >= 2:
            traceback.print_exception(exc, file=sys.stderr)
    warn(args.command, f"error: {message}")
    return code


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
