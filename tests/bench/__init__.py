"""Benchmarks and the fidelity simulator, as bounded smoke tests."""
