"""The endpoint conformance check: a suite of signed (and deliberately mis-signed) requests to a webhook."""
