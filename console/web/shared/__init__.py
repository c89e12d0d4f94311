"""What every console page shares: the blueprint and its hooks, declared routes, the API client, the visitor's workspace, live polling, page slots, keyset pages, exchanges, security headers."""
