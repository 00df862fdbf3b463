"""The server backend: the same journal on PostgreSQL (psycopg 3, the ``[postgres]`` extra)."""
