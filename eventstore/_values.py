"""Values the Session hands back: a turn as appended, a re-tell, a resume context."""

from __future__ import annotations

import attrs

from invariants import Owed
from reducers import Resumed


@attrs.frozen(kw_only=True)
class Turn:
    """A raw L0 turn as appended."""

    index: int
    role: str
    content: str
    tokens: int
    tok_start: int


@attrs.frozen(kw_only=True)
class Retelling(Turn):
    """The re-tell turn as appended, what it states (``told``) and what did not fit in
    its ``max_chars`` and stays owed (``still_owed``)."""

    told: tuple[Owed, ...]
    still_owed: tuple[Owed, ...]


@attrs.frozen(kw_only=True)
class Context:
    """What ``resume`` hands back: the digest or the raw checkpoint, with its sha256."""

    marker_id: str
    source: str
    content: str
    sha256: str
    checkpoint_at: int | None
    reason: str
    version: int

    def event(self) -> Resumed:
        """The ``Resumed`` event that records this context."""
        return Resumed(
            marker_id=self.marker_id,
            source=self.source,
            checkpoint_at=self.checkpoint_at,
            context_sha256=self.sha256,
            reason=self.reason,
        )
