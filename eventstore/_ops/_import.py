"""``import``: decide without the write lock, then commit in one short transaction.

Re-deciding every command, writing spill files and hashing the rows run against
a *scratch journal* in a private folder (``.<name>.import-XXXXXXXX/`` beside a
journal file; the temporary folder for a PostgreSQL journal). Nobody else sees
it, and the sessions being imported are new, so no other writer can change what
their decisions depend on (their own earlier events and the spills they wrote).

The target's write lock is taken once, at the end: in one transaction each
session is checked to be still absent, its rows are copied verbatim (hashes and
all), its spills stored under their recorded (content) handles, and a snapshot
written. COMMIT is the only commit point: a failure anywhere leaves no event, the
spill files the commit wrote are removed with its rollback, and the scratch folder
is always deleted (a ``kill -9`` can leave it behind; it holds nothing the journal
needs).
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType

import attrs

from eventstore._journal import Journal, check_session_id
from eventstore._location import is_url
from eventstore._ops._carry import UNTRAILED, UNTRAILED_NOTE, NotVerified, finding_notes
from eventstore._ops._redecide import Outcome, Redecider
from reducers import (
    Event,
    InvalidArgument,
    InvalidEvent,
    JournalError,
    Noted,
    SessionConfig,
    SessionStarted,
    SessionState,
    fold,
)


@attrs.frozen(kw_only=True)
class Imported:
    """What an import did for one session."""

    source_id: str
    session_id: str
    events: int
    redecided: int
    skipped: tuple[str, ...]
    unchanged: bool
    findings: tuple[str, ...] = ()  # carried with --allow-findings, recorded as notes


@attrs.frozen(kw_only=True)
class _Decided:
    source: str
    target: str
    state: SessionState
    outcome: Outcome


class Import:
    """One import into the journal at ``location`` (a file, a URL, or ``None`` for a
    journal with no file): ``decide`` (no lock), then ``commit``.

    ``findings`` are what the file itself shows wrong with a session (``_lines``);
    with those of the re-decision, a session that has any is refused
    (:class:`NotVerified`) unless ``allow_findings``: then it is imported as
    re-decided, each finding a ``Noted`` event after its last event. A session of
    ``untrailed`` (read without its trailer) gets a ``Noted`` event saying so."""

    def __init__(
        self,
        location: str | Path | None,
        sessions: dict[str, list[Event]],
        *,
        rename: str | None = None,
        findings: Mapping[str, Sequence[str]] | None = None,
        allow_findings: bool = False,
        untrailed: frozenset[str] = frozenset(),
    ) -> None:
        if rename is not None:
            check_session_id(rename)
            if len(sessions) != 1:
                raise InvalidArgument(
                    f"--session renames one session; the file holds {len(sessions)}"
                )
        self._findings = {sid: tuple(f) for sid, f in (findings or {}).items() if f}
        self._allow = allow_findings
        self._untrailed = untrailed
        for source, found in self._findings.items():
            if not allow_findings:
                raise NotVerified(source, found, "import")
        self._sessions = sessions
        self._rename = rename
        self._unchanged: list[Imported] = []
        self._decided: list[_Decided] = []
        self._folder, name = _scratch_folder(location)
        try:
            self._scratch = Journal(self._folder / name, synchronous="normal", snapshot_every=0)
        except BaseException:
            shutil.rmtree(self._folder, ignore_errors=True)
            raise

    def __enter__(self) -> Import:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Drop the scratch journal and its folder (idempotent)."""
        self._scratch.close()
        shutil.rmtree(self._folder, ignore_errors=True)

    # -- without the lock ------------------------------------------------------------
    def decide(
        self, existing: Journal | None, progress: Callable[[int], None] | None = None
    ) -> None:
        """Re-decide every session not already in ``existing`` into the scratch journal."""
        with self._scratch.recorder.transaction():  # one transaction: each command a savepoint
            self._decide_all(existing, progress)

    def _decide_all(self, existing: Journal | None, progress: Callable[[int], None] | None) -> None:
        for source, events in self._sessions.items():
            target = source if self._rename is None else self._rename
            if _holds(existing, target, events):
                self._unchanged.append(_unchanged(source, target, len(events)))
                continue
            decided = self._decide(source, target, events, progress)
            if existing is not None and existing.has_session(target):
                self._unchanged.append(self._same_as_stored(existing, decided))
            else:
                self._decided.append(decided)

    def _decide(
        self,
        source: str,
        target: str,
        events: list[Event],
        progress: Callable[[int], None] | None,
    ) -> _Decided:
        first = events[0]
        if not isinstance(first, SessionStarted):
            raise InvalidEvent(f"session {source!r} does not begin with SessionStarted")
        session = self._scratch.start_session(target, SessionConfig(**attrs.asdict(first)))
        outcome = Redecider(session, source, fold([first])).run(events[1:], progress)
        found = (*self._findings.get(source, ()), *outcome.findings)
        if found and not self._allow:
            raise NotVerified(source, found, "import")
        if found:  # carried: each finding recorded where the session now lives
            session.extend(finding_notes(found))
            outcome = attrs.evolve(outcome, findings=found)
        if source in self._untrailed:  # a fallback: the journal says so, audit shows it
            session.extend([Noted(kind=UNTRAILED_NOTE, text=UNTRAILED)])
        return _Decided(source=source, target=target, state=session.state, outcome=outcome)

    def _same_as_stored(self, journal: Journal, d: _Decided) -> Imported:
        """``unchanged`` if ``journal`` holds exactly what was decided, else InvalidEvent."""
        stored = journal.recorder.read_payloads(d.target)
        decided = self._scratch.recorder.read_payloads(d.target)
        if any(a != b for a, b in itertools.zip_longest(stored, decided)):
            raise InvalidEvent(f"session {d.target!r} already exists with a different history")
        return _unchanged(d.source, d.target, d.state.version)

    # -- under the lock --------------------------------------------------------------
    def commit(self, journal: Journal) -> list[Imported]:
        """Copy the decided sessions and their spills into ``journal``, in one transaction
        (a spill file written for it is removed again if it does not commit)."""
        results = list(self._unchanged)
        recorder = journal.recorder
        with recorder.attached(self._scratch.recorder), recorder.transaction():
            for d in self._decided:
                if journal.has_session(d.target):  # another writer created it meanwhile
                    results.append(self._same_as_stored(journal, d))
                else:
                    results.append(self._copy(journal, d))
        return results

    def _copy(self, journal: Journal, d: _Decided) -> Imported:
        journal.recorder.copy_session(self._scratch.recorder, d.target)
        spills = list(d.state.spills)
        for i, spill in enumerate(spills):  # the same bytes under the same (content) handles
            journal.spills.adopt(spill, self._scratch.spills.read(spill), spills[:i])
        if journal.snapshots.due(d.state, 0):
            journal.snapshots.save(d.target, d.state, None)
        return Imported(
            source_id=d.source,
            session_id=d.target,
            events=d.state.version,
            redecided=d.outcome.redecided,
            skipped=d.outcome.skipped,
            unchanged=False,
            findings=d.outcome.findings,
        )


def _holds(journal: Journal | None, session_id: str, events: list[Event]) -> bool:
    """Whether ``journal`` holds ``session_id`` with exactly ``events``."""
    if journal is None or not journal.has_session(session_id):
        return False
    return list(journal.session(session_id).events()) == events


def _unchanged(source: str, target: str, events: int) -> Imported:
    return Imported(
        source_id=source, session_id=target, events=events, redecided=0, skipped=(), unchanged=True
    )


def _scratch_folder(location: str | Path | None) -> tuple[Path, str]:
    """A private folder for the scratch journal, and the scratch file's name: beside a
    journal file (same disk), or in the temporary folder for a server journal (a URL,
    or ``None``: a journal with no file)."""
    if location is None or is_url(location):
        return Path(tempfile.mkdtemp(prefix="tierlog-import-")), "scratch.db"
    path = Path(location)
    if not path.parent.is_dir():
        raise JournalError(f"cannot create {path}: no folder {path.parent}")
    return Path(tempfile.mkdtemp(prefix=f".{path.name}.import-", dir=path.parent)), path.name


def _spill_root(db: Path) -> Path:
    """A journal file's spill folder: ``<db file>.spills`` beside it."""
    return db.with_name(db.name + ".spills")


@contextlib.contextmanager
def created_journal(path: str | Path) -> Iterator[Journal]:
    """A journal created at ``path`` for an import; removed again if the import fails
    and it still holds no event (with its ``-wal``/``-shm`` and an empty spill folder)."""
    journal = Journal(path)
    try:
        yield journal
    except BaseException:
        with contextlib.suppress(Exception):
            if not journal.sessions():
                journal.close()
                _remove_journal_files(Path(path))
        raise
    finally:
        journal.close()


def _remove_journal_files(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # only if nothing was left in it
        for folder in sorted(_spill_root(db).rglob("*"), reverse=True):
            folder.rmdir()
        _spill_root(db).rmdir()
