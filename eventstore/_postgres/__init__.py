"""The server backend: the same journal on PostgreSQL (psycopg 3, the ``[postgres]`` extra).

Importing this package does not import psycopg: a recorder imports it when it connects.
"""

from __future__ import annotations

from eventstore._postgres._recorder import PostgresRecorder
from eventstore._postgres._spills import TableSpills

__all__ = ["PostgresRecorder", "TableSpills"]
