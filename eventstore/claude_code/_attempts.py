"""One finding per attempt. Pure.

Each failed or refused tool call, each interruption and each user correction is a
negative fact of its own (``ItemDisposed``), keyed by what was attempted and the line
it happened on, and quoting the error line itself (not a prefix of the output). A
later success of the same call (the same tool with the same command, path or key)
marks every earlier unresolved attempt of it *resolved later*: the fact is re-disposed
``superseded`` with a reason starting ``resolved later``, which audits show instead of
a flag. Merging attempts for display is a view's business, never the ledger's.
"""

from __future__ import annotations

import json
import re

import attrs

from eventstore._ops import RESOLVED
from reducers import ItemDisposed

QUOTE_CHARS = 300
WHAT_CHARS = 100
EXCERPT_LINES = 3
_EXIT = re.compile(r"^(?:Exit code -?\d+|Error|<tool_use_error>)$", re.IGNORECASE)
_TAGS = re.compile(r"</?tool_use_error>")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_BARE = re.compile(r"^(?:[\s\u2500-\u257f\u2190-\u21ff>*\u2022\u00b7]|-\s)+")  # boxes, arrows
_PROGRESS = re.compile(r"\.\.\.$|^\[?[\d/ %=#>.-]*\]?$")  # "Checking 88 files ...", bars
_SAYS = re.compile(
    r"\b(?:error|errors|fail\w*|fatal|warning|denied|refused|rejected|cannot|can't|unable"
    r"|not found|no such|not a|ignored|invalid|undefined|never match\w*|blocked|missing"
    r"|exception|traceback|timed? ?out)\b|^\[[A-Z]\]|^\[[A-Z_ -]{3,}\]$",
    re.IGNORECASE,
)
CORRECTION = re.compile(
    r"^\s*(?:no\b|nope\b|stop\b|wait\b|wrong\b|not that\b|that'?s (?:not|wrong)\b"
    r"|don'?t\b|do not\b|nein\b|falsch\b|halt\b|non\b|arr[êe]te\b)",
    re.IGNORECASE,
)


def what(tool: str, key: str, input_json: str) -> str:
    """What a call attempted, as a person would repeat it: the tool and its full command
    (first line) or path, else its short key."""
    try:
        args = json.loads(input_json)
    except ValueError:
        args = None
    command = args.get("command") if isinstance(args, dict) else None
    if isinstance(command, str) and command.strip():
        key = " ".join(command.strip().splitlines()[0].split())
    key = key if len(key) <= WHAT_CHARS else key[: WHAT_CHARS - 3] + "..."
    return f"{tool}: {key}" if key else tool


def error_line(text: str) -> str:
    """What a tool's error output says went wrong, short and on one line: its first line
    that says so (error, fatal, denied, a ``[F]`` or ``[CREDO]`` tag, ...), then up to
    two more such lines, joined by `` | `` and cut at ``QUOTE_CHARS``. Exit-code lines,
    progress lines (``Checking 88 files ...``) and box drawing are skipped, and a literal
    ``\\n`` (output a hook escaped) is a line break. Without such a line, the first
    meaningful line."""
    lines = _lines(text)
    said = [x for x in lines if _SAYS.search(x) and not _EXIT.match(x)]
    plain = [x for x in lines if not _EXIT.match(x) and not _PROGRESS.search(x)]
    picked = list(dict.fromkeys(said))[:EXCERPT_LINES] or plain[:1] or lines[:1]
    quote = " | ".join(picked) or "(no output)"
    return quote if len(quote) <= QUOTE_CHARS else quote[: QUOTE_CHARS - 3] + "..."


def _lines(text: str) -> list[str]:
    """The non-empty lines of ``text``, without tags, colours and box drawing."""
    text = _ANSI.sub("", _TAGS.sub("", text.replace("\\n", "\n")))
    lines = (" ".join(_BARE.sub("", x).split()) for x in text.splitlines())
    return [x for x in lines if x]


def keyed(subject: str, line: int) -> str:
    """An attempt's key: what was attempted, and the line it happened on."""
    return f"{subject} (line {line})"


@attrs.define
class Attempts:
    """The failed attempts not resolved yet, by what they attempted."""

    open: dict[str, list[str]] = attrs.field(factory=dict)

    def failed(self, subject: str, line: int, disposition: str, quote: str) -> ItemDisposed:
        """A failed (or refused) attempt at ``subject`` on ``line``."""
        key = keyed(subject, line)
        self.open.setdefault(subject, []).append(key)
        return ItemDisposed(key=key, disposition=disposition, reason=f"line {line}: {quote}")

    def succeeded(self, subject: str, line: int) -> list[ItemDisposed]:
        """The earlier failed attempts at ``subject``, now resolved."""
        reason = f"{RESOLVED}: line {line}: the same call succeeded"
        return [
            ItemDisposed(key=key, disposition="superseded", reason=reason)
            for key in self.open.pop(subject, [])
        ]
