"""Claude Code integration: read its transcripts into sessions and review each compaction."""
