"""What a review says of one obligation live at a compaction, and why."""

from __future__ import annotations

import attrs

from eventstore._ops import ReviewLine


@attrs.frozen(kw_only=True)
class GivenBack:
    """A re-tell turn that stated an obligation a compaction's summary dropped."""

    version: int  # of its Retold event
    turn: int
    turns_after: int  # turns between the compaction's boundary note and it

    def __str__(self) -> str:
        when = "right" if not self.turns_after else plural(self.turns_after, "turn")
        return f"given back at v{self.version} (turn {self.turn}, {when} after the compaction)"


@attrs.frozen(kw_only=True)
class ObligationReview:
    """One obligation live at a compaction, and whether the summary evidences it."""

    kind: str  # open_call, constraint, negative_fact
    key: str
    detail: str  # the call's name, the rule, or the disposition
    raised_at_turn: int
    quote: str
    evidenced: bool
    resolved_later: bool = False  # an attempt a later success of the same call resolved
    kept_verbatim: bool = False  # raised in a turn Claude Code kept after the summary
    given_back: GivenBack | None = None  # the re-tell that gave it back, when one did
    resent: int | None = None  # the version at which Claude Code re-sent the rule's file

    @property
    def carried(self) -> bool:
        """Whether the context Claude Code resumed from holds it (or it is owed no more)."""
        return self.evidenced or self.resolved_later or self.kept_verbatim or bool(self.resent)

    @property
    def verdict(self) -> str:
        """``evidenced``, ``resolved later`` (no obligation any more), ``kept verbatim``
        (the summary need not state it), ``re-sent by Claude Code`` (a CLAUDE.md or
        memory rule Claude Code put back right after the boundary, before the first
        reply) or ``NOT evidenced`` (and, when a re-tell gave it back before the next
        compaction, where)."""
        if self.resolved_later:
            return "resolved later"
        if self.kept_verbatim:
            return "kept verbatim"
        if self.evidenced:
            return "evidenced"
        if self.resent:
            return f"re-sent by Claude Code at v{self.resent}"
        return "NOT evidenced" + (f", {self.given_back}" if self.given_back else "")

    def line(self) -> ReviewLine:
        """This judgement as a line of the review."""
        detail = "" if self.kind == "constraint" else f" ({self.detail})"
        return ReviewLine(
            ok=self.carried,
            verdict=self.verdict,
            subject=f"{self.kind} {self.key!r}{detail} at turn {self.raised_at_turn}",
            quote=self.quote,
        )


def plural(count: int, word: str) -> str:
    """``count`` and ``word``, in the plural unless one."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"
