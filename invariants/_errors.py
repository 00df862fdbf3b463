"""The two refusals a write can end in; both carry every violation found."""

from __future__ import annotations

from collections.abc import Sequence

from reducers import JournalError, Spilled, Violation


class _Refusal(JournalError):
    """A proposal refused by the invariants; the refusal itself was recorded."""

    def __init__(self, what: str, violations: Sequence[Violation]) -> None:
        self.violations: tuple[Violation, ...] = tuple(violations)
        lines = "\n".join(f"  {v}" for v in self.violations)
        super().__init__(f"{what} ({len(self.violations)} violation(s)):\n{lines}")


class UnrecoverableCompactionError(_Refusal):
    """A compaction that would break the recovery guarantee (C1-C5)."""

    def __init__(self, violations: Sequence[Violation], *, action: str = "halted") -> None:
        self.action = action
        super().__init__(f"compaction refused, {action}", violations)


class MarkerInvalid(_Refusal):
    """A marker that fails M1-M3; ``spilled`` is the spill of the raw turns holding what
    its node dropped (``on_unsafe="spill"``), if one was written."""

    def __init__(
        self,
        violations: Sequence[Violation],
        *,
        marker_id: str = "",
        spilled: Spilled | None = None,
    ) -> None:
        self.marker_id = marker_id
        self.spilled = spilled
        super().__init__(
            f"marker {marker_id} refused" if marker_id else "marker refused", violations
        )
