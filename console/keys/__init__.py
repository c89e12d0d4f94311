"""API keys: one workspace and one mode each; secrets shown once."""
