"""Safe retries: the `Idempotency-Key` records of `/v1` POSTs (README, "Safe retries")."""
