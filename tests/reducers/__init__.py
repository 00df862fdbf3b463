"""The pure folds: events to SessionState."""
