"""The workspace clock page and clock moves."""
