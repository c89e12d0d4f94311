"""Link flow session rows (to be written)."""
