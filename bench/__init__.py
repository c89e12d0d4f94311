"""Benchmarks: `python -m bench` runs them all; results and commands are kept in BENCHMARKS.md."""
