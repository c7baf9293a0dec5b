"""Handlers: the registered HTTP endpoints jobs are dispatched to (PUT/GET/DELETE /v1/handlers)."""
