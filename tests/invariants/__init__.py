"""The pure checks: compaction (C1-C5), markers (M1-M3), the digest context."""
