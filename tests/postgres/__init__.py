"""Tests that need PostgreSQL (skipped unless TEST_DATABASE_URL is set)."""
