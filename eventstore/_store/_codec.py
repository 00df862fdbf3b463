"""Events <-> canonical JSON payloads, through one strict cattrs converter.

Strict means: no extra keys, no coercion (``"5"`` is not an int, ``True`` is
not a count). Every decoding failure is an :class:`InvalidEvent` naming the
event type and the offending fields.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from reducers import (
    EVENT_TYPES,
    MAX_COUNT,
    Event,
    InvalidEvent,
    Violation,
    _events,
    canonical_bytes,
)
from reducers._json import FAST, fast_loads

if TYPE_CHECKING:
    import cattrs

SCHEMA_VERSION = 1


def _strict(kind: type[Any]) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if type(value) is not kind:
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return hook


@functools.cache
def strict_converter() -> cattrs.Converter:
    """The strict converter, made on first use: cattrs and its generated structure
    functions cost more than the rest of ``import eventstore``, and replaying or
    appending the common events never needs them."""
    import cattrs
    from cattrs.gen import make_dict_structure_fn

    conv = cattrs.Converter(forbid_extra_keys=True)
    for kind in (int, str, bool):
        conv.register_structure_hook(kind, _strict(kind))
    for cls in (*EVENT_TYPES.values(), Violation):
        conv.register_structure_hook(
            cls, make_dict_structure_fn(cls, conv, _cattrs_forbid_extra_keys=True)
        )
    return conv


def __getattr__(name: str) -> Any:
    """``converter``: ``strict_converter()``, under the name it had when it was made at
    import."""
    if name == "converter":
        return strict_converter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_flat(cls: type[Any]) -> bool:
    """Whether every field of ``cls`` is a scalar its validators fully check."""
    return all(f.type in _SCALARS for f in attrs.fields(attrs.resolve_types(cls)))


_SCALARS: tuple[object, ...] = (int, str, bool, int | None, str | None)


@functools.cache
def flat_events() -> dict[str, type[Event]]:
    """The flat events by name, found on first use (resolving every event's annotations
    costs more than opening a journal). Flat events skip cattrs on the replay hot path:
    their attrs validators check every field's type and domain, and ``cls(**data)``
    refuses unknown or missing keys (with a TypeError, after which cattrs runs to word
    the error)."""
    return {name: cls for name, cls in EVENT_TYPES.items() if _is_flat(cls)}


def _flat_fields(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    """The unstructure function of a flat event: its fields as they are, in one dict
    display (a generated function, as attrs generates ``__init__``)."""
    names = [a.name for a in attrs.fields(cls)]
    if not all(name.isidentifier() for name in names):  # pragma: no cover - attrs names
        raise TypeError(f"{cls.__name__}: field names must be identifiers")
    body = ", ".join(f"{name!r}: event.{name}" for name in names)
    scope: dict[str, Any] = {}
    exec(f"def unstructure(event):\n    return {{{body}}}\n", scope)
    function: Callable[[Any], dict[str, Any]] = scope["unstructure"]
    return function


def _unstructure(event: Any) -> Any:
    """An event that is not flat as JSON data, through cattrs."""
    return strict_converter().unstructure(event)


# the unstructure function of each event type met so far (``unstructurer`` makes them):
# flat ones read their fields directly (what cattrs does for them, without its generic
# dispatch); the others go through cattrs
_UNSTRUCTURE: dict[type[Any], Callable[[Any], Any]] = {}


def _fast_decoder(cls: type[Any]) -> Callable[[dict[str, Any]], Any]:
    """A flat event from a dict that orjson decoded (its strings are valid UTF-8), or
    ``None``: the attrs validators' checks written out in one generated function, the
    instance filled slot by slot. ``None`` (or an exception) sends the payload down the
    standard path, which words the error; equal results are property-tested."""
    fields = attrs.fields(cls)
    scope: dict[str, Any] = {
        "new": object.__new__,
        "cls": cls,
        "MAX": MAX_COUNT,
        "utf8": _events._utf8,  # whoever calls it, a lone surrogate is never storable
    }
    lines = ["def decode(data):", f"    if len(data) != {len(fields)}:", "        return None"]
    checks, sets = [], []
    for i, field in enumerate(fields):
        v = f"v{i}"
        lines.append(f"    {v} = data[{field.name!r}]")
        validator = field.validator
        if validator is _events._count:
            checks.append(f"type({v}) is int and 0 <= {v} <= MAX")
        elif validator is _events._name:
            checks.append(f"type({v}) is str and {v} != '' and ({v}.isascii() or utf8({v}))")
        elif validator is _events._text:
            checks.append(f"type({v}) is str and ({v}.isascii() or utf8({v}))")
        elif validator is _events._optional_count:
            checks.append(f"({v} is None or (type({v}) is int and 0 <= {v} <= MAX))")
        elif hasattr(validator, "allowed"):
            scope[f"allowed{i}"] = validator.allowed
            checks.append(f"type({v}) in (str, int) and {v} in allowed{i}")
        else:  # any other validator runs as it is (it raises InvalidEvent)
            scope[f"field{i}"], scope[f"check{i}"] = field, validator
            lines.append(f"    check{i}(None, field{i}, {v})")
        scope[f"set{i}"] = getattr(cls, field.name).__set__
        sets.append(f"    set{i}(event, {v})")
    if checks:
        lines += [f"    if not ({' and '.join(checks)}):", "        return None"]
    lines += ["    event = new(cls)", *sets]
    if hasattr(cls, "__attrs_post_init__"):
        lines.append("    event.__attrs_post_init__()")
    lines.append("    return event")
    exec("\n".join(lines) + "\n", scope)
    function: Callable[[dict[str, Any]], Any] = scope["decode"]
    return function


def _first_use(name: str) -> Callable[[dict[str, Any]], Any]:
    """What ``FAST_DECODERS`` holds for event type ``name`` until its first use: it
    puts the generated decoder in its place (``fast_decoder``) and decodes (a type that
    is not flat leaves the table, and its payload takes the standard path). Generating
    all of them at import cost a first ``eventstore.open`` more than its schema checks."""

    def decode(data: dict[str, Any]) -> Any:
        decoder = _generate(name)
        return None if decoder is None else decoder(data)

    return decode


def _generate(name: str) -> Callable[[dict[str, Any]], Any] | None:
    """Put the generated decoder of ``name`` in ``FAST_DECODERS`` (or take a type that
    is not flat out of it); return it."""
    _PENDING.discard(name)
    cls = flat_events().get(name)
    if cls is None:
        FAST_DECODERS.pop(name, None)
        return None
    decoder = FAST_DECODERS[name] = _fast_decoder(cls)
    return decoder


def fast_decoder(name: str) -> Callable[[dict[str, Any]], Any] | None:
    """The decoder ``FAST_DECODERS`` holds for event type ``name``, generated now if it
    is not yet; ``None`` for a type that is not flat (or not an event)."""
    return _generate(name) if name in _PENDING else FAST_DECODERS.get(name)


# the fast decoders of the flat events, used on what orjson decoded; each is generated
# on the first use of its type (``_PENDING``: the types not used yet)
FAST_DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = (
    {name: _first_use(name) for name in EVENT_TYPES} if FAST else {}
)
_PENDING = set(FAST_DECODERS)


def to_payload(event: Event) -> str:
    """The canonical JSON text of ``event``'s fields."""
    return canonical_bytes(unstructurer(type(event))(event)).decode()


def unstructurer(cls: type) -> Callable[[Any], Any]:
    """The function that turns an event of type ``cls`` into its JSON data."""
    unstructure = _UNSTRUCTURE.get(cls)
    if unstructure is None:
        name = getattr(cls, "__name__", "")
        if EVENT_TYPES.get(name) is not cls:
            raise InvalidEvent(f"not a tierlog event: {cls.__name__}")
        flat = name in flat_events()
        unstructure = _UNSTRUCTURE[cls] = _flat_fields(cls) if flat else _unstructure
    return unstructure


def from_payload(type_name: str, payload: str | dict[str, Any]) -> Event:
    """The event of type ``type_name`` that ``payload`` describes."""
    if type(payload) is str:
        try:  # the fast decoder; on any failure the standard path below decides
            event = from_fast_data(type_name, fast_loads(payload))
        except Exception:  # the standard path below words every failure
            event = None
        if event is not None:
            return event
    return _from_payload(type_name, payload)


def from_fast_data(type_name: str, data: Any) -> Event | None:
    """The event that ``data``, as ``fast_loads`` decoded it, describes; ``None`` (or
    an exception) when only ``from_payload``'s standard path can say what is wrong."""
    decode = FAST_DECODERS.get(type_name)
    if decode is not None:
        return decode(data) if type(data) is dict else None
    flat = flat_events().get(type_name)
    if flat is not None:
        return flat(**data) if type(data) is dict else None
    return _structure(type_name, data)


def from_rows(rows: Iterable[tuple[str, str]]) -> Iterator[Event]:
    """``from_payload`` of each ``(type, payload)`` row: the replay hot path, with the
    fast decoders' calls written out."""
    decoders, loads = FAST_DECODERS, fast_loads
    for type_name, payload in rows:
        event = None
        decode = decoders.get(type_name)
        if decode is not None and type(payload) is str:
            try:
                data = loads(payload)
                event = decode(data) if type(data) is dict else None
            except Exception:  # from_payload words every failure
                event = None
        yield event if event is not None else from_payload(type_name, payload)


def _from_payload(type_name: str, payload: str | dict[str, Any]) -> Event:
    """``from_payload`` with the standard library's decoder: every error worded."""
    try:
        try:
            data = json.loads(payload) if type(payload) is str else payload
        except (RecursionError, ValueError) as exc:
            if isinstance(exc, json.JSONDecodeError):
                raise
            raise InvalidEvent(f"{type_name}: {unreadable(exc)}") from None
        flat = flat_events().get(type_name)
        if flat is not None and type(data) is dict:
            try:
                return flat(**data)
            except TypeError:  # unknown or missing keys: cattrs below says which
                pass
        return _structure(type_name, data)
    except json.JSONDecodeError as exc:
        raise InvalidEvent(f"{type_name}: payload is not JSON ({exc})") from None
    except InvalidEvent as exc:
        if str(exc).startswith(f"{type_name}:"):
            raise
        raise InvalidEvent(f"{type_name}: {exc}") from None


def unreadable(exc: ValueError | RecursionError) -> str:
    """Why ``json.loads`` refused JSON text past its grammar (what a hand edit can do)."""
    why = "nested too deeply" if isinstance(exc, RecursionError) else "an integer too long"
    return f"payload is not JSON tierlog can decode ({why})"


def _structure(type_name: str, data: object) -> Event:
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise InvalidEvent(f"unknown event type {type_name!r}")
    if not isinstance(data, dict):
        raise InvalidEvent(f"{type_name}: payload must be a JSON object")
    conv = strict_converter()
    import cattrs  # loaded by strict_converter

    try:
        event: Event = conv.structure(data, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        raise InvalidEvent(f"{type_name}: {'; '.join(_messages(exc))}") from None
    return event


def _messages(exc: Exception) -> list[str]:
    import cattrs  # loaded by strict_converter

    if isinstance(exc, cattrs.BaseValidationError):
        return cattrs.transform_error(exc, format_exception=_format)
    return [str(exc)]


def _format(exc: BaseException, _: type | None) -> str:
    import cattrs  # loaded by strict_converter

    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return f"unknown field(s) {', '.join(sorted(exc.extra_fields))}"
    if isinstance(exc, KeyError):
        return "required field missing"
    return str(exc)


def hash_bytes(
    *,
    session_id: str,
    version: int,
    type_name: str,
    schema_version: int,
    payload: str,
    recorded_at: str,
) -> bytes:
    """The canonical bytes of one stored event (the hash chain's input).

    Exactly ``canonical_json`` of the row minus ``seq`` and the hashes: the keys
    below are in sorted order, ``payload`` is already canonical and is spliced in,
    and the strings are JSON-encoded the way ``canonical_json`` encodes them.
    """
    return (
        f'{{"payload":{payload},"recorded_at":{_text(recorded_at)},'
        f'"schema_version":{int(schema_version)},"session_id":{_text(session_id)},'
        f'"type":{_text(type_name)},"version":{int(version)}}}'
    ).encode()


_text = json.encoder.encode_basestring  # the string encoding canonical_json uses
