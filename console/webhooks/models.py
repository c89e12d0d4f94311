"""Webhook, delivery and attempt rows (to be written)."""
