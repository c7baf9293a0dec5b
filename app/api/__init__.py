"""HTTP adapter: routes, models, problem+json errors. No SQL, no business rules.

One package per resource (handlers, jobs, executions, callbacks, schedules, queues, nodes,
health), each with its routes.py and models.py side by side, and views.py where a domain object
becomes a model's JSON shape. Shared: app.py (create_api), body.py (the body cap and the route
classes: strict JSON, the API key checked before the body), auth.py, errors.py, responses.py
(orjson and problem+json), fields.py (field types and base models), services.py.
"""
