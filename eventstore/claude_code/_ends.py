"""Where a later read of a transcript's tail starts: the state after the main chain's
last user or assistant entry, as reading the file up to there leaves it (see
``_resume``, which records it, and ``_transcript.read_tail``, which starts from it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from eventstore.claude_code._chain import Unresumable
from eventstore.claude_code._items import Queued, settled_at
from eventstore.claude_code._items import Raw as RawItem
from eventstore.claude_code._lines import Entry, Seen, Warnings

TALK = ("user", "assistant")


@attrs.frozen(kw_only=True)
class End:
    """Where a later read of the transcript's tail starts: after the main chain's last
    user or assistant entry (``leaf``, its ``line``; ``message``: the id of the chain's
    last assistant message, which the tail must not go on with), with the text
    still queued there; ``last`` is the last line read (its notes are recorded), and
    ``folded``, ``types``, ``digests`` the warnings given, the unknown entry types
    noted, and the entries without a uuid read up to the leaf (blake2b hex)."""

    leaf: str
    message: str | None
    line: int
    queued: tuple[Queued, ...]
    last: int
    folded: tuple[str, ...]
    types: tuple[str, ...]
    digests: tuple[str, ...]


@attrs.frozen(kw_only=True)
class Start:
    """An :class:`End` and the session it was read into, to read the tail from."""

    session_id: str
    end: End
    calls: frozenset[str]  # the calls still open


def digests(texts: Iterable[str]) -> dict[bytes, int]:
    try:
        return {bytes.fromhex(t): 0 for t in texts}
    except ValueError:
        raise Unresumable("a recorded digest is not hex") from None


def end_of(
    found: Sequence[Entry],
    chain: set[int],
    settling: tuple[Sequence[RawItem], int, Sequence[Queued]],
    count: int,
    reading: tuple[Warnings, Seen],
    before: End | None,
) -> End | None:
    """Where a read of the tail can start (see :class:`End`), if nothing is open there."""
    raw, at, queued = settling
    warnings, seen = reading
    if chain:
        leaf = next(e for e in reversed(found) if e.line in chain and e.type in TALK)
        said = (e for e in reversed(found) if e.line in chain and e.type == "assistant")
        message = next((e.message_id for e in said), before.message if before else None)
        mark = (leaf.uuid, message, leaf.line)
    elif before is not None:
        mark, at = (before.leaf, before.message, before.line), -1
    else:
        return None
    settled, left = settled_at(raw[: at + 1], queued)
    if mark[0] is None or settled != count:
        return None
    return End(
        leaf=mark[0],
        message=mark[1],
        line=mark[2],
        queued=tuple(left),
        last=max(seen.last, before.last if before else 0),
        folded=warnings.folded(),
        types=tuple(sorted(seen.noted)),
        digests=tuple(sorted(d.hex() for d, at in seen.lines.items() if at <= mark[2])),
    )
