"""The console's pages, one module per area; importing them attaches their routes to the blueprint."""

from console.web.views import (  # noqa: F401
    clock,
    endpoint,
    events,
    explore,
    keys,
    present,
    scenarios,
    timeline,
    training,
    walkthrough,
    webhooks,
)
