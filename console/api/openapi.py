"""GET /v1/openapi.json (placeholder until the document is generated)."""

from console.api import api  # noqa: F401
