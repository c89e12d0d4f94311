"""Outbound webhook signing and verification."""

from console.webhooks.signing import WebhookVerificationError, sign, verify

__all__ = ["WebhookVerificationError", "sign", "verify"]
