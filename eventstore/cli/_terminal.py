"""What reaches a terminal: no control character, no bidi override, no URL's secret.

Agent text is anybody's text. Printed raw, an ESC or BEL starts a terminal escape
sequence (an OSC sequence retitles the window, others move the cursor or rewrite
what is already on the screen), and a U+202E makes a line read backwards. Text
output shows each such character as an escape (``\\x1b``, ``\\u202e``) and every
URL with its password hidden; JSON output stays exact: the same characters are
written as JSON's own ``\\u`` escapes, which decode to the same strings.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

from eventstore._location import redact_text

# C0 controls (tab and newline apart), DEL and C1 controls, the bidi marks, embeddings,
# overrides and isolates, and the Unicode line and paragraph separators
_MARKS = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_IN_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_MARKS}]")
_IN_CELL = re.compile(f"[\x00-\x1f\x7f-\x9f{_MARKS}]")
_IN_JSON = re.compile(f"[\x7f-\x9f{_MARKS}]")  # JSON escapes C0 controls itself


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, cell: bool = False) -> str:
    """``text`` safe for a terminal: control characters and bidi marks escaped (in a
    ``cell``, tabs and newlines too), URL passwords hidden."""
    text = redact_text(text)
    return (_IN_CELL if cell else _IN_LINES).sub(_escape, text)


def json_safe(text: str) -> str:
    """JSON text with DEL, C1 controls and bidi marks written as ``\\u`` escapes: the
    same JSON values, nothing a terminal acts on."""
    return _IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def say(text: str = "", *, file: TextIO | None = None) -> None:
    """Print ``text`` (lines of it) made safe for a terminal."""
    print(printable(text), file=file or sys.stdout)


def warn(command: str, text: str) -> None:
    """A line on standard error, ``tierlog COMMAND: ...``, made safe for a terminal."""
    say(f"tierlog {command}: {text}", file=sys.stderr)
