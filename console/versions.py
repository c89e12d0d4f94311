"""API versions, sent in the `Service-Version` header (the API checks them; webhooks and Link shape by them)."""

from __future__ import annotations

# Oldest first. 2023-11-22 makes `params.action` optional in switch events (spec, Versioning).
SUPPORTED_VERSIONS = ("2023-04-18", "2023-11-22")
LATEST_VERSION = SUPPORTED_VERSIONS[-1]
PRIME_MIN_VERSION = "2023-11-22"
