"""The event vocabulary: one frozen attrs class per SPEC event.

Events are plain values. Their validators enforce what a single event can know
on its own (types, enums, non-negative sizes, ``lo < hi``); rules that need the
session's history (a range inside the log, a known call) live in
``invariants``. Every validator raises :class:`InvalidEvent`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeAlias

import attrs

from reducers._errors import InvalidEvent

UNITS: Final = ("turns", "tokens")
ON_UNSAFE: Final = ("spill", "halt")
CALL_KINDS: Final = ("tool_call", "file_handle", "subprocess")
DISPOSITIONS: Final = ("rejected", "failed", "superseded")
TIERS: Final = (1, 2)
REFUSAL_ACTIONS: Final = ("spilled", "halted")
RESUME_SOURCES: Final = ("digest", "raw_checkpoint")
MAX_COUNT: Final = 2**63 - 1  # SQLite's and the turn tables' largest integer
MAX_HANDLE: Final = 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NOT_CANONICAL = re.compile(r"(?:^|/)\.{0,2}(?:/|$)")  # an empty, "." or ".." component

_Validator: TypeAlias = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _fail(attribute: attrs.Attribute[Any], problem: str, value: object) -> InvalidEvent:
    return InvalidEvent(f"{attribute.name}: {problem} (got {value!r})")


def _utf8(value: str) -> bool:
    """Whether ``value`` encodes as UTF-8 (no lone surrogate)."""
    if value.isascii():
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def text_problem(value: object, *, empty: bool = True) -> str | None:
    """Why ``value`` is not a string tierlog can store, or ``None``."""
    if not isinstance(value, str):
        return "must be a string"
    if not empty and not value:
        return "must be a non-empty string"
    if not _utf8(value):
        return "must be valid Unicode (a lone surrogate cannot be stored)"
    return None


def count_problem(value: object) -> str | None:
    """Why ``value`` is not an integer in ``0..2**63-1``, or ``None``."""
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        return "must be an integer from 0 to 2**63-1"
    return None


def handle_problem(handle: object) -> str | None:
    """Why ``handle`` is not a canonical relative path inside a spill root, or ``None``.

    Canonical: ``/``-separated, not absolute, no empty, ``.`` or ``..`` component,
    no backslash or control character, at most 1024 characters.
    """
    if not isinstance(handle, str) or text_problem(handle, empty=False):
        return text_problem(handle, empty=False)
    if len(handle) > MAX_HANDLE:
        return f"must be at most {MAX_HANDLE} characters"
    if handle.startswith("/") or "\\" in handle:
        return "must be a relative path with / separators"
    if _CONTROL.search(handle):
        return "must not hold control characters"
    if _NOT_CANONICAL.search(handle):
        return "must be a canonical path: no empty, '.' or '..' component"
    return None


# The validators pass the common case (ASCII text, an integer in range) at once: every
# event is built through them, a live session's turn included.
def _text(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is str and value.isascii():
        return
    if (problem := text_problem(value)) is not None:
        raise _fail(attribute, problem, value)


def _name(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is str and value and value.isascii():
        return
    if (problem := text_problem(value, empty=False)) is not None:
        raise _fail(attribute, problem, value)


def _count(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is int and 0 <= value <= MAX_COUNT:
        return
    if (problem := count_problem(value)) is not None:
        raise _fail(attribute, problem, value)


def _handle(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if (problem := handle_problem(value)) is not None:
        raise _fail(attribute, problem, value)


def _optional_count(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        _count(inst, attribute, value)


def _one_of(*allowed: object) -> _Validator:
    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) not in (str, int) or value not in allowed:
            raise _fail(attribute, f"must be one of {', '.join(map(repr, allowed))}", value)

    check.allowed = allowed  # type: ignore[attr-defined]  # read by eventstore's fast decoder
    return check


def _names(_: object, attribute: attrs.Attribute[Any], value: tuple[object, ...]) -> None:
    if any(text_problem(v, empty=False) for v in value):
        raise _fail(attribute, "must be a sequence of non-empty strings", value)


def _ordered(lo: str, hi: str, strict: bool = True) -> Callable[[Any], None]:
    def check(inst: Any) -> None:
        a, b = getattr(inst, lo), getattr(inst, hi)
        if a > b or (strict and a == b):
            rel = "<" if strict else "<="
            raise InvalidEvent(f"{type(inst).__name__}: need {lo} {rel} {hi} (got [{a}, {b}))")

    return check


def _to_tuple(value: object) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvalidEvent(f"expected a sequence, got {type(value).__name__}")
    return tuple(value)


def require_count(what: str, value: object) -> int:
    """``value`` if it is an integer in ``0..2**63-1``, else :class:`InvalidEvent`."""
    if type(value) is int and 0 <= value <= MAX_COUNT:
        return value
    raise InvalidEvent(f"{what}: {count_problem(value)} (got {value!r})")


def require_name(what: str, value: object) -> str:
    """``value`` if it is a non-empty storable string, else :class:`InvalidEvent`."""
    if isinstance(value, str) and text_problem(value, empty=False) is None:
        return value
    raise InvalidEvent(f"{what}: {text_problem(value, empty=False)} (got {value!r})")


def require_span(what: str, value: object) -> tuple[int, int]:
    """``value`` as a ``(lo, hi)`` pair of counts, else :class:`InvalidEvent`."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvalidEvent(f"{what}: expected a (lo, hi) pair, got {type(value).__name__}")
    pair = tuple(value)
    if len(pair) != 2:
        raise InvalidEvent(f"{what}: expected a (lo, hi) pair, got {len(pair)} item(s)")
    return require_count(f"{what}[0]", pair[0]), require_count(f"{what}[1]", pair[1])


def require_sequence(what: str, value: object) -> tuple[Any, ...]:
    """``value`` as a tuple if it is a sequence (not a string or mapping), else InvalidEvent."""
    try:
        return _to_tuple(value)
    except InvalidEvent as exc:
        raise InvalidEvent(f"{what}: {exc}") from None


def _to_dispositions(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise InvalidEvent(f"dispositions: expected a mapping, got {type(value).__name__}")
    out = {}
    for key in sorted(value, key=str):
        if text_problem(key, empty=False):
            raise InvalidEvent(f"dispositions: keys must be non-empty strings (got {key!r})")
        if value[key] not in DISPOSITIONS:
            raise InvalidEvent(f"dispositions[{key!r}]: must be one of {DISPOSITIONS}")
        out[key] = value[key]
    return out


@attrs.frozen(kw_only=True)
class Violation:
    """One broken rule: its code, snake_case name, a message naming keys or offsets."""

    rule: str = attrs.field(validator=_name)
    name: str = attrs.field(validator=_name)
    message: str = attrs.field(validator=_text)
    lo: int | None = attrs.field(default=None, validator=_optional_count)
    hi: int | None = attrs.field(default=None, validator=_optional_count)

    def __str__(self) -> str:
        span = f" [{self.lo}, {self.hi})" if self.lo is not None else ""
        return f"{self.rule} {self.name}{span}: {self.message}"


@attrs.frozen(kw_only=True)
class SessionConfig:
    """A session's configuration: budgets, units, the recovery floor, the unsafe policy."""

    window_tokens: int = attrs.field(validator=_count)
    trigger_tokens: int = attrs.field(validator=_count)
    truncator_unit: str = attrs.field(validator=_one_of(*UNITS))
    floor_span: int = attrs.field(validator=_count)
    floor_unit: str = attrs.field(validator=_one_of(*UNITS))
    on_unsafe: str = attrs.field(validator=_one_of(*ON_UNSAFE))

    def __attrs_post_init__(self) -> None:
        if self.trigger_tokens > self.window_tokens:
            raise InvalidEvent(
                f"trigger_tokens ({self.trigger_tokens}) exceeds "
                f"window_tokens ({self.window_tokens})"
            )


@attrs.frozen(kw_only=True)
class SessionStarted(SessionConfig):
    """The first event of every session: its configuration."""


@attrs.frozen(kw_only=True)
class TurnAppended:
    """One raw L0 turn."""

    index: int = attrs.field(validator=_count)
    role: str = attrs.field(validator=_name)
    content: str = attrs.field(validator=_text)
    tokens: int = attrs.field(validator=_count)


@attrs.frozen(kw_only=True)
class CallOpened:
    """A tool call, file handle or subprocess the agent opened."""

    call_id: str = attrs.field(validator=_name)
    kind: str = attrs.field(validator=_one_of(*CALL_KINDS))
    name: str = attrs.field(validator=_text)


@attrs.frozen(kw_only=True)
class CallResolved:
    """An open call came back."""

    call_id: str = attrs.field(validator=_name)
    outcome: str = attrs.field(validator=_text)


@attrs.frozen(kw_only=True)
class ConstraintStated:
    """A user constraint that stays pending until lifted."""

    key: str = attrs.field(validator=_name)
    text: str = attrs.field(validator=_text)


@attrs.frozen(kw_only=True)
class ConstraintLifted:
    """A pending constraint no longer applies."""

    key: str = attrs.field(validator=_name)


@attrs.frozen(kw_only=True)
class ItemDisposed:
    """A negative fact: an approach rejected, failed or superseded."""

    key: str = attrs.field(validator=_name)
    disposition: str = attrs.field(validator=_one_of(*DISPOSITIONS))
    reason: str = attrs.field(validator=_text)


@attrs.frozen(kw_only=True)
class Truncated:
    """Budget enforcement dropped ``[lo, hi)`` from the working context."""

    lo: int = attrs.field(validator=_count)
    hi: int = attrs.field(validator=_count)
    reason: str = attrs.field(validator=_text)

    def __attrs_post_init__(self) -> None:
        _ordered("lo", "hi")(self)


@attrs.frozen(kw_only=True)
class Spilled:
    """A byte-exact, re-readable copy of the raw range ``[lo, hi)``."""

    lo: int = attrs.field(validator=_count)
    hi: int = attrs.field(validator=_count)
    handle: str = attrs.field(validator=_handle)
    sha256: str = attrs.field(validator=_name)
    bytes: int = attrs.field(validator=_count)

    def __attrs_post_init__(self) -> None:
        _ordered("lo", "hi", strict=False)(self)
        if not _is_sha256(self.sha256):
            raise InvalidEvent(f"sha256: must be 64 lowercase hex digits (got {self.sha256!r})")


@attrs.frozen(kw_only=True)
class Checkpointed:
    """A raw-log checkpoint at position ``at``."""

    at: int = attrs.field(validator=_count)


@attrs.frozen(kw_only=True)
class Compacted:
    """A summary node folding ``[covers_lo, covers_hi)`` into tier 1 or 2."""

    node_id: str = attrs.field(validator=_name)
    tier: int = attrs.field(validator=_one_of(*TIERS))
    input_lo: int = attrs.field(validator=_count)
    input_hi: int = attrs.field(validator=_count)
    covers_lo: int = attrs.field(validator=_count)
    covers_hi: int = attrs.field(validator=_count)
    tail_start: int = attrs.field(validator=_count)
    summary: str = attrs.field(validator=_text)
    tokens: int = attrs.field(validator=_count)
    dispositions: dict[str, str] = attrs.field(factory=dict, converter=_to_dispositions)
    resolved_ids: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple, validator=_names)
    unresolved_ids: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple, validator=_names)
    constraints: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple, validator=_names)
    replaces: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple, validator=_names)

    def __attrs_post_init__(self) -> None:
        _ordered("input_lo", "input_hi", strict=False)(self)
        _ordered("covers_lo", "covers_hi")(self)


@attrs.frozen(kw_only=True)
class CompactionRefused:
    """A proposal the invariants refused, with every violation and what was done."""

    proposal: Compacted
    violations: tuple[Violation, ...] = attrs.field(converter=_to_tuple)
    action: str = attrs.field(validator=_one_of(*REFUSAL_ACTIONS))


@attrs.frozen(kw_only=True)
class MarkerEmitted:
    """A recovery marker on a summary node."""

    marker_id: str = attrs.field(validator=_name)
    node_id: str = attrs.field(validator=_name)
    tier_depth: int = attrs.field(validator=_one_of(*TIERS))
    resolved_ids: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple, validator=_names)


@attrs.frozen(kw_only=True)
class MarkerRefused:
    """A marker emission that failed M1-M3. ``action`` is ``spilled`` when the raw turns
    holding what its node dropped were spilled just before (``on_unsafe="spill"``),
    ``halted`` when nothing was (the only value before 0.2: absent, it is the default)."""

    marker_id: str = attrs.field(validator=_name)
    node_id: str = attrs.field(validator=_name)
    violations: tuple[Violation, ...] = attrs.field(converter=_to_tuple)
    action: str = attrs.field(default="halted", validator=_one_of(*REFUSAL_ACTIONS))


@attrs.frozen(kw_only=True)
class MarkerInvalidated:
    """A committed compaction broke an existing marker."""

    marker_id: str = attrs.field(validator=_name)
    rule: str = attrs.field(validator=_name)
    reason: str = attrs.field(validator=_text)


@attrs.frozen(kw_only=True)
class Resumed:
    """A resume from a marker, and which context it returned."""

    marker_id: str = attrs.field(validator=_name)
    source: str = attrs.field(validator=_one_of(*RESUME_SOURCES))
    checkpoint_at: int | None = attrs.field(default=None, validator=_optional_count)
    context_sha256: str = attrs.field(validator=_name)
    reason: str = attrs.field(validator=_text)


@attrs.frozen(kw_only=True)
class TurnRetracted:
    """The runtime took turn ``index`` back (an SDK ``pop_item``).

    The turn leaves the working context; the log keeps it. What the turn raised
    (a call, a constraint) stays owed: a retraction changes what is resident,
    not what must be carried.
    """

    index: int = attrs.field(validator=_count)
    reason: str = attrs.field(validator=_text)


@attrs.frozen(kw_only=True)
class ContextCleared:
    """The runtime cleared its working context (an SDK ``clear_session``).

    Every turn before ``before`` (the turn count when it was cleared) and every
    live summary leave the working context; the log keeps them, and obligations
    stay owed, as for :class:`TurnRetracted`.
    """

    before: int = attrs.field(validator=_count)
    reason: str = attrs.field(validator=_text)


NOTE_KIND: Final = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _note_kind(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not NOTE_KIND.fullmatch(value):
        raise _fail(attribute, "must be a snake_case name of at most 40 characters", value)


@attrs.frozen(kw_only=True)
class Noted:
    """A guess, skip or fallback made while reading someone else's data (an ingested
    transcript): ``kind`` names the heuristic (``chain_fallback``, ``off_chain``, ...),
    ``text`` says what was done, ``line`` where in the source, ``count`` how many
    items it concerns. It changes no tier state: ``audit`` and ``report`` show it.
    """

    kind: str = attrs.field(validator=_note_kind)
    text: str = attrs.field(validator=_name)
    line: int | None = attrs.field(default=None, validator=_optional_count)
    count: int = attrs.field(default=1, validator=_count)


@attrs.frozen(kw_only=True)
class Ingested:
    """Where ingesting a source file got to: its first ``offset`` bytes (``lines``
    lines), whose sha256 is ``sha256``, are in the session. ``resume`` (canonical JSON,
    empty when there is none) is what a later ingest needs to read only what follows
    them; it is checked against the file before it is used. It changes no tier state."""

    source: str = attrs.field(validator=_name)
    offset: int = attrs.field(validator=_count)
    lines: int = attrs.field(validator=_count)
    sha256: str = attrs.field(validator=_name)
    resume: str = attrs.field(default="", validator=_text)

    def __attrs_post_init__(self) -> None:
        if not _is_sha256(self.sha256):
            raise InvalidEvent(f"sha256: must be 64 lowercase hex digits (got {self.sha256!r})")


def _to_digests(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise InvalidEvent(f"constraints: expected a mapping, got {type(value).__name__}")
    out = {}
    for key in sorted(value, key=str):
        if text_problem(key, empty=False):
            raise InvalidEvent(f"constraints: keys must be non-empty strings (got {key!r})")
        if not _is_sha256(value[key]):
            raise InvalidEvent(f"constraints[{key!r}]: must be 64 lowercase hex digits")
        out[key] = value[key]
    return out


def _is_sha256(value: object) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


@attrs.frozen(kw_only=True)
class Retold:
    """Turn ``index`` (a ``system`` turn, appended just before) re-tells obligations the
    working context owed: constraints by the digest of their key and text
    (``reducers.constraint_digest``), negative facts with their disposition, open calls
    by id. ``max_chars`` is the limit the block was written to and ``cut`` how many owed
    obligations it left out."""

    index: int = attrs.field(validator=_count)
    constraints: dict[str, str] = attrs.field(factory=dict, converter=_to_digests)
    dispositions: dict[str, str] = attrs.field(factory=dict, converter=_to_dispositions)
    calls: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple, validator=_names)
    max_chars: int | None = attrs.field(default=None, validator=_optional_count)
    cut: int = attrs.field(default=0, validator=_count)

    def __attrs_post_init__(self) -> None:
        if not (self.constraints or self.dispositions or self.calls):
            raise InvalidEvent("Retold: a re-tell states at least one obligation")
        if len(set(self.calls)) != len(self.calls):
            raise InvalidEvent(f"calls: each call is re-told once (got {list(self.calls)!r})")


Event: TypeAlias = (
    SessionStarted
    | TurnAppended
    | CallOpened
    | CallResolved
    | ConstraintStated
    | ConstraintLifted
    | ItemDisposed
    | Truncated
    | Spilled
    | Checkpointed
    | Compacted
    | CompactionRefused
    | MarkerEmitted
    | MarkerRefused
    | MarkerInvalidated
    | Resumed
    | TurnRetracted
    | ContextCleared
    | Noted
    | Retold
    | Ingested
)

EVENT_TYPES: Final[dict[str, type[Event]]] = {
    cls.__name__: cls
    for cls in (
        SessionStarted,
        TurnAppended,
        CallOpened,
        CallResolved,
        ConstraintStated,
        ConstraintLifted,
        ItemDisposed,
        Truncated,
        Spilled,
        Checkpointed,
        Compacted,
        CompactionRefused,
        MarkerEmitted,
        MarkerRefused,
        MarkerInvalidated,
        Resumed,
        TurnRetracted,
        ContextCleared,
        Noted,
        Retold,
        Ingested,
    )
}

# Events that record facts, not decisions: a batch of them is validated and folded
# as is (``Session.extend``); decisions go through their own commands.
PLAIN_EVENTS: Final = frozenset(
    {
        TurnAppended,
        CallOpened,
        CallResolved,
        ConstraintStated,
        ConstraintLifted,
        ItemDisposed,
        Truncated,
        Checkpointed,
        TurnRetracted,
        ContextCleared,
        Noted,
        Ingested,
    }
)
