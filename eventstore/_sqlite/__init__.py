"""The embedded backend: one SQLite file, its schema, its pragmas and its guards."""
