"""Events: the outbox, written in the same transaction as the change that causes them."""
