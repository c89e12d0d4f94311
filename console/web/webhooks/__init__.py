"""Webhooks: registrations, the built-in inbox, the signature debugger, each endpoint's page and its conformance check."""
