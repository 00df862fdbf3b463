"""The SQLite backend: schema, immutability, tampering."""
