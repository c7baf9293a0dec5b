"""The dashboard: server-rendered pages at /ui on the node's own application (docs/dashboard.md).

The pages read through app.services, as the API's routes do; forms post to /ui/... endpoints of
their own (form-encoded) that call the same services. The /v1 routes never read the dashboard's
cookie: they take the Authorization header alone (app/api/auth.py)."""
