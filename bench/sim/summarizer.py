"""The lossy summarizer: each obligation it sees is carried with some probability.

Its draws are a pure function of (session seed, key, tier, covered range), so
both arms get the same summary from the same input, a re-summarize of the same
input keeps what the first one kept, and a higher drop rate drops a superset of
what a lower one drops. Negative facts are dropped twice as often as the rest.
It cannot carry what it does not see (a truncated turn), except a must-carry hint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import attrs

from bench.sim.obligations import Obligation

NEGATIVE_FACTOR = 2.0


@attrs.frozen(kw_only=True)
class Carried:
    """What one summary carries, in the Compacted fields."""

    constraints: tuple[str, ...] = ()
    dispositions: dict[str, str] = attrs.field(factory=dict)
    unresolved_ids: tuple[str, ...] = ()

    @property
    def keys(self) -> set[str]:
        """Every key carried."""
        return {*self.constraints, *self.dispositions, *self.unresolved_ids}


def draw(seed: int, key: str, where: tuple[int, int, int]) -> float:
    """A uniform number in [0, 1) fixed by the session, the key and the summary's place."""
    digest = hashlib.sha256(f"{seed}|{key}|{where}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@attrs.frozen(kw_only=True)
class Summarizer:
    """A summarizer that drops each obligation with probability ``drop``."""

    drop: float
    seed: int

    def keeps(self, ob: Obligation, where: tuple[int, int, int]) -> bool:
        """Whether a summary at ``where`` (tier, covers_lo, covers_hi) keeps ``ob``."""
        p = self.drop * NEGATIVE_FACTOR if ob.kind == "negative" else self.drop
        return draw(self.seed, ob.key, where) >= p

    def summarize(
        self,
        seen: Iterable[Obligation],
        where: tuple[int, int, int],
        hints: Iterable[Obligation] = (),
    ) -> Carried:
        """The fields of a summary of ``seen``; every hint is carried."""
        kept = {ob.key: ob for ob in seen if self.keeps(ob, where)}
        kept.update((ob.key, ob) for ob in hints)
        obs = sorted(kept.values(), key=lambda o: o.key)
        return Carried(
            constraints=tuple(o.key for o in obs if o.kind == "constraint"),
            dispositions={o.key: o.disposition for o in obs if o.kind == "negative"},
            unresolved_ids=tuple(o.key for o in obs if o.kind == "call"),
        )
