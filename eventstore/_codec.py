"""Events <-> canonical JSON payloads, through one strict cattrs converter.

Strict means: no extra keys, no coercion (``"5"`` is not an int, ``True`` is
not a count). Every decoding failure is an :class:`InvalidEvent` naming the
event type and the offending fields.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn

from reducers import EVENT_TYPES, Event, InvalidEvent, Violation, canonical_bytes
from reducers._json import fast_loads

SCHEMA_VERSION = 1


def _strict(kind: type[Any]) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if type(value) is not kind:
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return hook


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    for kind in (int, str, bool):
        conv.register_structure_hook(kind, _strict(kind))
    for cls in (*EVENT_TYPES.values(), Violation):
        conv.register_structure_hook(
            cls, make_dict_structure_fn(cls, conv, _cattrs_forbid_extra_keys=True)
        )
    return conv


converter = _make_converter()


def _is_flat(cls: type[Any]) -> bool:
    """Whether every field of ``cls`` is a scalar its validators fully check."""
    return all(f.type in _SCALARS for f in attrs.fields(attrs.resolve_types(cls)))


_SCALARS: tuple[object, ...] = (int, str, bool, int | None, str | None)
# Flat events skip cattrs on the replay hot path: their attrs validators check every
# field's type and domain, and ``cls(**data)`` refuses unknown or missing keys (with a
# TypeError, after which cattrs runs to word the error).
_FLAT = {name: cls for name, cls in EVENT_TYPES.items() if _is_flat(cls)}


def _flat_fields(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    """The unstructure function of a flat event: its fields as they are."""
    names = tuple(a.name for a in attrs.fields(cls))
    if len(names) == 1:
        (name,) = names
        return lambda event: {name: getattr(event, name)}
    get = operator.attrgetter(*names)
    return lambda event: dict(zip(names, get(event), strict=True))


# the unstructure function of every event type: flat ones read their fields directly
# (what cattrs does for them, without its generic dispatch); the others go through cattrs
_UNSTRUCTURE: dict[type[Any], Callable[[Any], Any]] = {
    cls: _flat_fields(cls) if name in _FLAT else converter.unstructure
    for name, cls in EVENT_TYPES.items()
}


def to_payload(event: Event) -> str:
    """The canonical JSON text of ``event``'s fields."""
    unstructure = _UNSTRUCTURE.get(type(event))
    if unstructure is None:
        raise InvalidEvent(f"not a tierlog event: {type(event).__name__}")
    return canonical_bytes(unstructure(event)).decode()


def from_payload(type_name: str, payload: str | dict[str, Any]) -> Event:
    """The event of type ``type_name`` that ``payload`` describes."""
    if type(payload) is str:
        try:  # the fast decoder; on any failure the standard path below decides
            data = fast_loads(payload)
            flat = _FLAT.get(type_name)
            if flat is not None and type(data) is dict:
                return flat(**data)
            return _structure(type_name, data)
        except Exception:  # the standard path below words every failure
            pass
    return _from_payload(type_name, payload)


def _from_payload(type_name: str, payload: str | dict[str, Any]) -> Event:
    """``from_payload`` with the standard library's decoder: every error worded."""
    try:
        data = json.loads(payload) if type(payload) is str else payload
        flat = _FLAT.get(type_name)
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


def _structure(type_name: str, data: object) -> Event:
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise InvalidEvent(f"unknown event type {type_name!r}")
    if not isinstance(data, dict):
        raise InvalidEvent(f"{type_name}: payload must be a JSON object")
    try:
        event: Event = converter.structure(data, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        raise InvalidEvent(f"{type_name}: {'; '.join(_messages(exc))}") from None
    return event


def _messages(exc: Exception) -> list[str]:
    if isinstance(exc, cattrs.BaseValidationError):
        return cattrs.transform_error(exc, format_exception=_format)
    return [str(exc)]


def _format(exc: BaseException, _: type | None) -> str:
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
