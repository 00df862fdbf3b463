"""``tierlog demo``: both incidents against a fresh journal, narrated."""

from __future__ import annotations

import shutil
from pathlib import Path

from eventstore._journal import Journal
from eventstore._location import is_url
from eventstore.cli._incidents import SQL_HINTS, Say, dropped_rejection, evicted_constraint
from reducers import JournalError

DEMO_PREFIX = "incident-"


def run_demo(path: str | Path, say: Say) -> None:
    """(Re)create the demo journal at ``path`` and run both incidents on it (a
    PostgreSQL URL must name an empty journal: its events cannot be deleted)."""
    db: str | Path = path if is_url(path) else Path(path)
    if isinstance(db, Path):
        _clear(db)
    with Journal(db) as journal:
        if not isinstance(db, Path) and (held := journal.sessions()):
            raise JournalError(
                f"{journal.recorder.location} holds sessions ({', '.join(held[:3])}): the demo"
                " needs an empty PostgreSQL journal (its events cannot be deleted)"
            )
        dropped_rejection(journal, say)
        say("")
        evicted_constraint(journal, say)
        where = journal.recorder.location
    db = where if isinstance(db, Path) else f"'{where}'"
    say("")
    say(f"Journal: {db}. Look at it with plain SQL, for example:")
    for sql in SQL_HINTS:
        say(f'  tierlog sql {db} "{sql}"')
    say(f"  tierlog audit {db}      tierlog verify {db}")


def _clear(db: Path) -> None:
    """Remove an earlier demo journal; refuse to touch anything else."""
    if not db.exists():
        return
    with Journal(db, readonly=True) as journal:
        foreign = [s for s in journal.sessions() if not s.startswith(DEMO_PREFIX)]
    if foreign:
        raise JournalError(
            f"{db} holds non-demo sessions ({', '.join(foreign[:3])}): not replacing it"
        )
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(f"{db}.spills", ignore_errors=True)
