"""tierlog's hooks merged into a Claude Code ``settings.json`` text, and taken out again. Pure.

The text is edited where it changes, never re-serialised: a group of hooks is appended
to ``hooks.<Event>`` (the array, or ``"hooks"`` itself, made when missing) and removed by
cutting out exactly what was appended, so ``uninstall(install(text)) == text`` byte for
byte whenever nobody edited the file in between, and every other hook, key, comment-free
formatting and ordering stays as it was even when somebody did. A hook is tierlog's when
its command runs tierlog's hook entry point (:func:`is_ours`); an event's array, or the
``hooks`` object, left empty by the removal goes too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from reducers import InvalidArgument

# tierlog's hook module as a word of the command, or the command ``tierlog claude-code
# hook`` (``eventstore.cli`` run as a module too): not any command holding those words
# (``npx my-claude-code hook-notify`` is the user's, and install and uninstall leave it)
OURS = re.compile(
    r"(?:^|[\s/\\\"'])(?:eventstore[/\\]claude_code[/\\]_hook\.py"
    r"|(?:tierlog|eventstore\.cli)[\"']?\s+claude-code\s+hook)(?=$|[\s\"';|&])"
)
_SPACE = " \t\n\r"
_SCALAR = json.JSONDecoder()


def is_ours(command: object) -> bool:
    """Whether a hook command runs tierlog's Claude Code hook."""
    return isinstance(command, str) and OURS.search(command) is not None


# -- a JSON text with the spans of its values -------------------------------------------
@attrs.frozen(kw_only=True)
class Span:
    """A JSON value in a text: where it starts and ends, what it is, and its parts
    (an array's items, an object's members as ``(key, key start, value)``)."""

    start: int
    end: int
    value: Any
    items: tuple[Span, ...] = ()
    members: tuple[tuple[str, int, Span], ...] = ()

    def member(self, key: str) -> Span | None:
        """The value of ``key`` in this object (the last one, as JSON parsers read it)."""
        found = [value for name, _, value in self.members if name == key]
        return found[-1] if found else None


def parse(text: str) -> Span:
    """The spans of a JSON text; InvalidArgument when it is not one JSON value."""
    try:
        span = _value(text, _skip(text, 0))
    except (ValueError, IndexError) as exc:
        raise InvalidArgument(f"not JSON: {exc}") from None
    if _skip(text, span.end) != len(text):
        raise InvalidArgument(f"not JSON: extra data at character {span.end}")
    return span


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def _value(text: str, at: int) -> Span:
    char = text[at]
    if char == "{":
        return _object(text, at)
    if char == "[":
        return _array(text, at)
    value, end = _SCALAR.raw_decode(text, at)  # a string, number, true, false or null
    return Span(start=at, end=end, value=value)


def _array(text: str, start: int) -> Span:
    items: list[Span] = []
    at = _skip(text, start + 1)
    while text[at] != "]":
        if items:
            at = _skip(text, _expect(text, at, ","))
        items.append(_value(text, at))
        at = _skip(text, items[-1].end)
    value = [item.value for item in items]
    return Span(start=start, end=at + 1, value=value, items=tuple(items))


def _object(text: str, start: int) -> Span:
    members: list[tuple[str, int, Span]] = []
    at = _skip(text, start + 1)
    while text[at] != "}":
        if members:
            at = _skip(text, _expect(text, at, ","))
        if text[at] != '"':
            raise ValueError(f"expected a key at character {at}")
        key, after = _SCALAR.raw_decode(text, at)
        value = _value(text, _skip(text, _expect(text, _skip(text, after), ":")))
        members.append((key, at, value))
        at = _skip(text, value.end)
    plain = {key: span.value for key, _, span in members}
    return Span(start=start, end=at + 1, value=plain, members=tuple(members))


def _expect(text: str, at: int, char: str) -> int:
    if text[at] != char:
        raise ValueError(f"expected {char!r} at character {at}")
    return at + 1


# -- layout ------------------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class Layout:
    """How the text is laid out: one line, or one item a line indented by ``unit``."""

    pretty: bool
    unit: str

    @staticmethod
    def of(text: str) -> Layout:
        """The layout of an existing text (two spaces when it holds no indented line)."""
        found = re.search(r"\n([ \t]+)\S", text)
        return Layout(pretty="\n" in text.strip(), unit=found.group(1) if found else "  ")

    def dump(self, value: Any, depth: int) -> str:
        """``value`` as JSON text placed at nesting ``depth``."""
        if not self.pretty:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        width = len(self.unit)
        text = json.dumps(value, ensure_ascii=False, indent=width)
        if self.unit != " " * width:
            text = re.sub(r"(?m)^( +)", lambda m: self.unit * (len(m.group(1)) // width), text)
        return text.replace("\n", "\n" + self.unit * depth)

    def gap(self, depth: int) -> str:
        """What comes before an item at nesting ``depth``."""
        return "\n" + self.unit * depth if self.pretty else ""

    def created(self, value: Any, depth: int) -> str:
        """A container install makes (an event's array, or ``hooks`` with its arrays):
        whitespace follows each of its opening brackets, which is how :func:`uninstall`
        tells it from a container that was there, empty, before."""
        if self.pretty:
            return self.dump(value, depth)
        if isinstance(value, list):
            return "[ " + ",".join(self.dump(v, depth) for v in value) + "]"
        inner = ",".join(json.dumps(k) + ":" + self.created(v, depth) for k, v in value.items())
        return "{ " + inner + "}"


def _append(
    text: str, container: Span, part: str, layout: Layout, depth: int, *, root: bool = False
) -> str:
    """``text`` with ``part`` (an array item or ``"key": value``) appended to
    ``container``, at nesting ``depth``; :func:`_cut` of it gives ``text`` back. In an
    empty container other than the root, ``part`` follows the bracket at once."""
    parts = container.items or [value for _, _, value in container.members]
    if parts:
        at = parts[-1].end
        return text[:at] + "," + layout.gap(depth) + part + text[at:]
    close = container.end - 1
    inner = text[container.start + 1 : close]
    if root:
        tail = inner if "\n" in inner else layout.gap(depth - 1)
        return text[: container.start + 1] + layout.gap(depth) + part + tail + text[close:]
    return text[: container.start + 1] + part + inner + text[close:]


def _cut(text: str, container: Span, index: int, *, root: bool = False) -> str:
    """``text`` without part ``index`` of ``container`` (and the comma that joined it)."""
    bounds = [(s.start, s.end) for s in container.items] or [
        (key_at, value.end) for _, key_at, value in container.members
    ]
    start, end = bounds[index]
    if index + 1 < len(bounds):
        return text[:start] + text[bounds[index + 1][0] :]
    if index > 0:
        return text[: bounds[index - 1][1]] + text[end:]
    close = container.end - 1
    rest = text[end:close]
    if root and rest == "\n":  # what _append put after the only member of an empty root
        rest = ""
    return text[: container.start + 1] + rest + text[close:]


def _created(text: str, container: Span) -> bool:
    """Whether install made ``container`` (see :meth:`Layout.created`)."""
    return text[container.start + 1] in _SPACE


# -- install and uninstall -----------------------------------------------------------------
def install(text: str | None, groups: Mapping[str, Mapping[str, Any]]) -> str:
    """``text`` (``None``: no file yet) with one group of hooks per event of ``groups``
    appended to ``hooks.<event>``, after taking out any of tierlog's there already. The
    same groups again change nothing. InvalidArgument when the text is not a JSON object
    or ``hooks`` or an event's value is not what Claude Code reads."""
    if text is None or not text.strip(_SPACE):
        value = {"hooks": {event: [dict(group)] for event, group in groups.items()}}
        return json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    if _installed(text) == {event: [dict(group)] for event, group in groups.items()}:
        return text
    text = uninstall(text)
    layout = Layout.of(text)
    for event, group in groups.items():
        text = _add(text, event, dict(group), layout)
    return text


def holds_ours(text: str) -> bool:
    """Whether a settings text runs tierlog's hooks (``False`` for one Claude Code cannot
    read)."""
    try:
        return bool(_installed(text))
    except InvalidArgument:
        return False


def _installed(text: str) -> dict[str, list[dict[str, Any]]]:
    """tierlog's groups in ``text``, by event."""
    hooks = _hooks(parse(text))
    found: dict[str, list[dict[str, Any]]] = {}
    for event, _, array in hooks.members if hooks is not None else ():
        for item in array.items:
            if _is_our_group(item.value):
                found.setdefault(event, []).append(item.value)
    return found


def _add(text: str, event: str, group: dict[str, Any], layout: Layout) -> str:
    root = parse(text)
    hooks = _hooks(root)
    colon = ": " if layout.pretty else ":"
    if hooks is None:
        part = '"hooks"' + colon + layout.created({event: [group]}, 1)
        return _append(text, root, part, layout, 1, root=True)
    array = hooks.member(event)
    if array is None:
        part = json.dumps(event) + colon + layout.created([group], 2)
        return _append(text, hooks, part, layout, 2)
    return _append(text, array, layout.dump(group, 3), layout, 3)


def uninstall(text: str) -> str:
    """``text`` without tierlog's hooks: a group holding only tierlog's goes whole, one
    holding others too loses only tierlog's; what that leaves empty goes too."""
    while (found := _next_removal(text, parse(text))) is not None:
        container, index = found
        text = _cut(text, container, index, root=container.start == parse(text).start)
    return text


def _next_removal(text: str, root: Span) -> tuple[Span, int] | None:
    """The next part to cut, as ``(container, index)``: a hook of tierlog's in a group
    that holds others too, or a group of tierlog's only, or (when that group is all an
    array install made holds) the event, or (when that event is all a ``hooks`` install
    made holds) ``hooks``."""
    hooks = _hooks(root)
    if hooks is None:
        return None
    for at, (_, _, array) in enumerate(hooks.members):
        for index, group in enumerate(array.items):
            inner = group.member("hooks") if isinstance(group.value, dict) else None
            if inner is None or not isinstance(inner.value, list):
                continue
            ours = [i for i, hook in enumerate(inner.value) if _is_our_hook(hook)]
            if not ours:
                continue
            if len(ours) < len(inner.value):
                return inner, ours[0]
            if len(array.items) > 1 or not _created(text, array):
                return array, index
            if len(hooks.members) > 1 or not _created(text, hooks):
                return hooks, at
            return root, max(i for i, (k, _, _) in enumerate(root.members) if k == "hooks")
    return None


def _hooks(root: Span) -> Span | None:
    """The ``hooks`` object of a settings text (``None`` when absent), every event an array."""
    if not isinstance(root.value, dict):
        raise InvalidArgument("settings: the file holds no JSON object")
    hooks = root.member("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks.value, dict):
        raise InvalidArgument('settings: "hooks" is not an object')
    for event, _, array in hooks.members:
        if not isinstance(array.value, list):
            raise InvalidArgument(f'settings: "hooks.{event}" is not an array')
    return hooks


def _is_our_hook(hook: object) -> bool:
    return isinstance(hook, dict) and is_ours(hook.get("command"))


def _is_our_group(group: object) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and bool(hooks) and all(_is_our_hook(h) for h in hooks)
