"""``python -m eventstore`` is ``tierlog``."""

from eventstore.cli import run

run()
