"""The simulated world, read-only."""
