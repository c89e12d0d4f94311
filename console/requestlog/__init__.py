"""The request log and usage of every API call: collected by an after-request hook, written in batches.

The log is observability, not state: rows are written by a per-process background writer up to a
flush interval after the response, so a crash can lose the last second or so of log rows (a full
queue is counted and shown as "N requests not logged"). State changes are never deferred like this:
API views commit them before they answer.
"""
