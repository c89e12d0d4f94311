"""The guided walkthrough: key, webhook, Link token, Link, inbox, jobs, each a real API call, ticked from what exists."""
