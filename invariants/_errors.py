"""The two refusals a write can end in; both carry every violation found."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from reducers import JournalError, Spilled, Violation


class _Refusal(JournalError):
    """A proposal refused by the invariants; the refusal itself was recorded."""

    def __init__(self, what: str, violations: Sequence[Violation]) -> None:
        self.violations: tuple[Violation, ...] = tuple(violations)
        lines = "\n".join(f"  {v}" for v in self.violations)
        super().__init__(f"{what} ({len(self.violations)} violation(s)):\n{lines}")

    def _options(self) -> dict[str, Any]:
        """The keyword arguments that made this refusal, besides its violations."""
        return {}

    def __reduce__(self) -> tuple[Any, ...]:
        # an exception pickles as ``cls(*args)``, and ``args`` is the message: rebuilt
        # from its violations and options instead, it says the same in another process
        return _remade, (type(self), self.violations, self._options()), self.__dict__


def _remade(
    cls: Callable[..., _Refusal], violations: Sequence[Violation], options: dict[str, Any]
) -> _Refusal:
    return cls(violations, **options)


class UnrecoverableCompactionError(_Refusal):
    """A compaction that would break the recovery guarantee (C1-C5)."""

    def __init__(self, violations: Sequence[Violation], *, action: str = "halted") -> None:
        self.action = action
        super().__init__(f"compaction refused, {action}", violations)

    def _options(self) -> dict[str, Any]:
        return {"action": self.action}


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

    def _options(self) -> dict[str, Any]:
        return {"marker_id": self.marker_id, "spilled": self.spilled}
