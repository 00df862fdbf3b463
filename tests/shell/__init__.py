"""The shell: Journal, Session, decide, effects, concurrency and crashes."""
