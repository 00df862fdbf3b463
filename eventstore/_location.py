"""What a journal's location names: a SQLite file, or a PostgreSQL URL (and its secrets,
which never reach a message)."""

from __future__ import annotations

import re

SCHEMES = ("postgresql://", "postgres://")


def is_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL journal rather than a file."""
    return isinstance(location, str) and location.startswith(SCHEMES)


_USERINFO_SECRET = re.compile(r"^([a-z][a-z0-9+.-]*://[^:/@]*:)([^/]*)@", re.I)
_QUERY_SECRET = re.compile(r"([?&](?:ssl)?password=)([^&#]*)", re.I)


def redact(url: str) -> str:
    """The URL without its secrets (the userinfo password, any ``password=`` or
    ``sslpassword=`` parameter), for messages; never raises, even on a malformed URL."""
    url = _USERINFO_SECRET.sub(r"\1***@", str(url), count=1)
    return _QUERY_SECRET.sub(r"\1***", url)
