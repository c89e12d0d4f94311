"""The request log: every API call of the workspace."""
