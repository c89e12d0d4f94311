"""Cross-cutting building blocks: the model base, time, ids and error types."""
