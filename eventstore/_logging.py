"""structlog, loaded when a line is logged: a process that logs nothing never imports it.

``import structlog`` costs tens of milliseconds (``structlog.stdlib`` imports asyncio),
more than the rest of a Claude Code hook or a ``tierlog --help``; most commits log
nothing. ``bound`` wraps a stdlib logger as the library always has, and runs first the
configuration an application (the CLI) left with ``on_first_use``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from structlog.stdlib import BoundLogger

_pending: list[Callable[[], None]] = []


def on_first_use(configure: Callable[[], None]) -> None:
    """Run ``configure`` (a ``structlog.configure`` call) before the first line is bound,
    or now if structlog is loaded already."""
    import sys

    if "structlog" in sys.modules:
        configure()
    else:
        _pending[:] = [configure]


def bound(logger: logging.Logger, **context: Any) -> BoundLogger:
    """``logger`` wrapped as a structlog ``BoundLogger`` with ``context`` bound."""
    import structlog  # here, not at the top: see the module's docstring

    while _pending:
        _pending.pop()()
    log: BoundLogger = structlog.wrap_logger(
        logger, wrapper_class=structlog.stdlib.BoundLogger
    ).bind(**context)
    return log
