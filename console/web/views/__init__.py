"""The console's pages, one module per area; importing them attaches their routes to the blueprint."""

from console.web.views import (  # noqa: F401
    clock,
    events,
    explore,
    keys,
    scenarios,
    timeline,
    walkthrough,
    webhooks,
)
