"""API keys per mode and the workspace itself (start, keep, start over)."""
