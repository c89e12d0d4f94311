"""Workspaces: one customer each, with its own keys, data and clock."""
