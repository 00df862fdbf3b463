"""The command line and the demo's incidents."""
