"""The ``tierlog`` command line: a thin layer over the library, its output, the demo."""

from eventstore.cli._main import build_parser, main, run

__all__ = ["build_parser", "main", "run"]
