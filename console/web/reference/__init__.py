"""The API reference page and its "try it" calls."""
