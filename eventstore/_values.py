"""Values the Session hands back: a turn as appended, a resume context."""

from __future__ import annotations

import attrs

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
