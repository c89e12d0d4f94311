"""The scenario gallery (every sandbox test-data row, one click each) and the Link launcher page."""
