"""Scheduled work: due items in the database, run by the worker loop."""
