"""Health: the worker's heartbeat in the database and `GET /healthz` for load balancers and supervisors."""
