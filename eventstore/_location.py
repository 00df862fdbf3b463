"""What a journal's location names: a SQLite file, or a PostgreSQL URL (and its secrets,
which never reach a message).

A location that looks like a URL of any other scheme (``mysql://``, ``postgresq://``,
``postgresql+psycopg://``, ``POSTGRESQL://``) is refused with its secrets hidden: it
is never taken for a file name, created, or printed whole; nor is a location that
holds a URL with a password after a space or a prefix, or a libpq ``password=``.
"""

from __future__ import annotations

import re

SCHEMES = ("postgresql://", "postgres://")


def is_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL journal rather than a file."""
    return isinstance(location, str) and location.startswith(SCHEMES)


_URL_START = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def check_location(location: object) -> None:
    """InvalidArgument if ``location`` is a URL tierlog does not open (its secrets
    hidden in the message); anything else is left to the backends."""
    if not isinstance(location, str) or is_url(location):
        return
    found = _URL_START.match(location)
    if found is None:
        _check_no_secret(location)
        return
    scheme = found.group(1)
    from reducers import InvalidArgument  # here: the CLI checks locations before it loads them

    raise InvalidArgument(
        f"{redact(location)}: tierlog opens a journal file or a postgresql:// URL,"
        f" not a {scheme}:// URL{_hint(scheme)}"
    )


def _check_no_secret(location: str) -> None:
    """InvalidArgument if a location that is no URL holds a secret: a URL with a
    password after a space or a prefix (`` postgresql://``, ``file:postgresql://``), or
    a libpq ``password=`` keyword. Taken for a file name, it would be printed whole."""
    shown = redact_text(location)
    if shown != location:
        from reducers import InvalidArgument  # here, as above: nothing loaded before

        raise InvalidArgument(
            f"{shown}: tierlog opens a journal file or a postgresql:// URL; this holds a"
            " password but is neither (a space or a prefix before postgresql://?)"
        )


def _hint(scheme: str) -> str:
    lower = scheme.lower()
    if lower in ("postgresql", "postgres"):
        return " (write the scheme in lower case: postgresql://)"
    if lower.startswith(("postgresql+", "postgres+")):
        return " (write postgresql://: tierlog picks the driver itself)"
    import difflib  # only for a mistyped scheme

    close = difflib.get_close_matches(lower, ["postgresql", "postgres"], n=1, cutoff=0.7)
    return f" (did you mean {close[0]}://?)" if close else ""


# ``scheme:/`` too: a URL taken for a path comes back with its ``//`` made one
_USERINFO_SECRET = re.compile(r"^([a-z][a-z0-9+.-]*:/{1,2}[^:/@]*:)([^/]*)@", re.I)
_QUERY_SECRET = re.compile(r"([?&](?:ssl)?password=)([^&#]*)", re.I)


def redact(url: str) -> str:
    """The URL without its secrets (the userinfo password, any ``password=`` or
    ``sslpassword=`` parameter), for messages; never raises, even on a malformed URL."""
    url = _USERINFO_SECRET.sub(r"\1***@", str(url), count=1)
    return _QUERY_SECRET.sub(r"\1***", url)


# A URL anywhere in a text (up to a space or a quote), and a libpq keyword password.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/{1,2}[^\s'\"<>`]+")
_KEYWORD_SECRET = re.compile(r"(\b(?:ssl)?password\s*=\s*)('[^']*'|[^\s'\"&#]+)", re.I)


def redact_text(text: str) -> str:
    """``text`` with the secrets of every URL in it hidden (and of a libpq
    ``password=...`` keyword): what a message, a log line or a terminal may show."""
    if ":/" not in text and "password" not in text.lower():
        return text
    text = _URL_IN_TEXT.sub(lambda m: redact(m.group(0)), text)
    return _KEYWORD_SECRET.sub(r"\1***", text)
