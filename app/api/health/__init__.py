"""Health: liveness, readiness and Prometheus metrics; no API key (DESIGN §4)."""
