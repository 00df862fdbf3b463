"""Claude Code transcripts: reading, ingest, review."""
