"""Small shared helpers: error types, ids, time, JSON text and responses, request-body declarations and validators, parameter checks, stop signals."""
