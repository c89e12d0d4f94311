"""The three modes and where each one's API lives."""

from __future__ import annotations

SANDBOX = "sandbox"
DEVELOPMENT = "development"
PRODUCTION = "production"
MODES = (SANDBOX, DEVELOPMENT, PRODUCTION)  # weakest first: a sandbox secret reaches no real money

# Production sits at the root, the others under their own prefix (spec: each mode has its own base URL).
URL_PREFIXES = {SANDBOX: "/sandbox", DEVELOPMENT: "/development", PRODUCTION: ""}
# Where the API's paths start, one per mode.
API_PREFIXES = tuple(URL_PREFIXES[mode] + "/v1" for mode in MODES)


def is_api_path(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in API_PREFIXES)


def base_url(root: str, mode: str) -> str:
    """The base URL of a mode given the server root, e.g. http://127.0.0.1:5000."""
    return root.rstrip("/") + URL_PREFIXES[mode]
