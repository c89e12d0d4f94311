"""Safe retries: the `Idempotency-Key` records of `/v1` POSTs (docs/api.md, "Safe retries")."""
