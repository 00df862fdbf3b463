"""``tierlog ship``: copy what one journal lacks from another, verbatim.

A fleet keeps a SQLite journal per host and ships it to one PostgreSQL journal
that auditors query; any pair of backends works. For each session, ship compares
the destination's head with the source's row at that version; if they agree, it
copies the rows after it (versions, payloads, timestamps and hashes unchanged) in
chunks, each one transaction that checks every link against the destination's
head, together with the bytes of the spills those rows record. Shipping again
copies nothing; an interrupted ship resumes where its last chunk committed. A
session whose history in the destination differs from the source's is refused,
naming the first version where they part.

A session the source's ``verify`` rejects (its chain, a decision, a spill's bytes,
its snapshot) is not shipped: the result names the finding. ``allow_findings``
ships it anyway, verbatim: its rows fail the destination's ``verify`` as they fail
the source's (rows that do not link are never written).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import zip_longest

import attrs

from eventstore._errors import ConcurrencyError, IntegrityError
from eventstore._journal import Journal
from eventstore._ops._carry import NotVerified, check_carried
from eventstore._store import Recorded, from_payload
from reducers import InvalidArgument, Spill, Spilled

CHUNK = 10_000  # events a transaction carries (at 1,000, a PostgreSQL ship took 1.46x as long)
MAX_CHUNK = 1_000_000


@attrs.frozen(kw_only=True)
class Shipped:
    """What ``ship`` did for one session."""

    session_id: str
    events: int  # rows copied by this run
    spills: int  # spills whose bytes were copied by this run
    head: int  # the destination's version afterwards
    differs_at: int | None = None  # the first version where the histories part
    problem: str | None = None  # why the session was not (fully) shipped
    findings: tuple[str, ...] = ()  # what verify finds in the source (shipped if allowed)

    def __str__(self) -> str:
        if self.problem is not None:
            return f"{self.session_id}: not shipped: {self.problem}"
        if not self.events:
            return f"{self.session_id}: up to date at v{self.head}"
        first = self.head - self.events + 1
        spills = f", {self.spills} spill(s)" if self.spills else ""
        carried = (
            f", with {len(self.findings)} finding(s): {self.findings[0]}" if self.findings else ""
        )
        return (
            f"{self.session_id}: shipped {self.events} event(s), v{first}..v{self.head}"
            f"{spills}{carried}"
        )


def ship(
    src: Journal,
    dest: Journal,
    session_ids: list[str] | None = None,
    *,
    chunk: int = CHUNK,
    progress: Callable[[str], None] | None = None,
    allow_findings: bool = False,
) -> list[Shipped]:
    """Ship every session of ``src`` (or ``session_ids``) to ``dest``; a session that
    does not verify only with ``allow_findings``."""
    require_chunk(chunk)
    results = []
    for session_id in session_ids or src.sessions():
        if progress:
            progress(session_id)
        results.append(_ship_session(src, dest, session_id, chunk, allow_findings))
    return results


def require_chunk(chunk: object) -> int:
    """``chunk`` if it is a number of events a transaction may carry, else InvalidArgument."""
    if type(chunk) is not int or not 1 <= chunk <= MAX_CHUNK:
        raise InvalidArgument(f"a chunk is 1 to {MAX_CHUNK:,} events, not {chunk!r}")
    return chunk


def _ship_session(
    src: Journal, dest: Journal, session_id: str, chunk: int, allow_findings: bool
) -> Shipped:
    top = src.recorder.head(session_id).version
    head = dest.recorder.head(session_id)
    found: tuple[str, ...] = ()
    if head.version < top:  # something to carry: what verify says of it first
        try:
            found = tuple(check_carried(src, session_id, "ship", allow_findings=allow_findings))
        except NotVerified as exc:
            return Shipped(
                session_id=session_id,
                events=0,
                spills=0,
                head=head.version,
                problem=str(exc),
                findings=exc.findings,
            )
    differs = _first_difference(src, dest, session_id, head.version, head.hash)
    if differs is not None:
        return Shipped(
            session_id=session_id,
            events=0,
            spills=0,
            head=head.version,
            differs_at=differs,
            problem=f"its history in {dest.recorder.location} differs from the source's"
            f" at v{differs}",
        )
    events = spills = 0
    version = head.version
    earlier: list[Spill] = []
    try:
        while version < top:
            rows = list(src.recorder.read(session_id, start=version + 1, stop=version + chunk))
            if not rows:
                break
            try:
                spills += _ship_chunk(src, dest, session_id, rows, earlier)
            except ConcurrencyError:
                moved = _moved_on(src, dest, session_id, version)
                if moved is None:
                    raise
                version = moved  # another ship committed these rows: go on after them
                continue
            events += len(rows)
            version = rows[-1].version
    except (IntegrityError, ConcurrencyError) as exc:
        return Shipped(
            session_id=session_id,
            events=events,
            spills=spills,
            head=version,
            problem=str(exc),
            findings=found,
        )
    return Shipped(
        session_id=session_id, events=events, spills=spills, head=version, findings=found
    )


def _ship_chunk(
    src: Journal, dest: Journal, session_id: str, rows: list[Recorded], earlier: list[Spill]
) -> int:
    """One transaction on ``dest``: the spills the rows record (stored on the spills of
    this run before them), then the rows."""
    spills = list(_spills(rows))
    with dest.recorder.transaction():
        for spill in spills:
            dest.spills.adopt(spill, src.spills.read(spill), earlier)
            earlier.append(spill)
        dest.recorder.append_recorded(session_id, rows)
    return len(spills)


def _moved_on(src: Journal, dest: Journal, session_id: str, version: int) -> int | None:
    """``dest``'s new head if it moved past ``version`` and still agrees with ``src``
    (another ship of the same rows won the race), else ``None``."""
    head = dest.recorder.head(session_id)
    if head.version <= version:
        return None
    if _first_difference(src, dest, session_id, head.version, head.hash) is not None:
        return None
    return head.version


def _spills(rows: list[Recorded]) -> Iterator[Spill]:
    """The spills the rows record, as the state would hold them (``earlier`` bases)."""
    for row in rows:
        if row.type == "Spilled":
            event = from_payload(row.type, row.payload)
            assert isinstance(event, Spilled)
            yield Spill(version=row.version, **attrs.asdict(event))


def _first_difference(
    src: Journal, dest: Journal, session_id: str, version: int, digest: str
) -> int | None:
    """``None`` if ``dest``'s history (``version``, hash ``digest`` at its head) is a
    prefix of ``src``'s, else the first version where the two differ. The head row
    itself must be the source's, not only its hash: a head edited behind tierlog's
    back (its hash kept) no longer links, and nothing is appended onto it."""
    if version == 0:
        return None
    mine = next(src.recorder.read(session_id, start=version, stop=version), None)
    if mine is not None and mine.hash == digest and _same_row(dest, mine):
        return None  # the hash chains agree up to here
    theirs = dest.recorder.read(session_id)
    for a, b in zip_longest(src.recorder.read(session_id, stop=version), theirs):
        if a is None or b is None or a[1:] != b[1:]:
            return a.version if a is not None else b.version if b is not None else version
    return version


def _same_row(journal: Journal, row: Recorded) -> bool:
    """Whether ``journal`` holds ``row`` at its version, every column alike."""
    stored = next(journal.recorder.read(row.session_id, start=row.version, stop=row.version), None)
    return stored is not None and stored[1:] == row[1:]
