"""The OpenAPI tags, one per resource, in the order the document lists them: generators group
their operations by tag (a client module per tag), and documentation pages show these texts."""

from __future__ import annotations

from typing import Any

TAGS: list[dict[str, Any]] = [
    {"name": "handlers", "description": "The HTTP endpoints Jobwire dispatches to, each by name, with the signing "
                                        "secrets that sign every dispatch (Standard Webhooks)."},
    {"name": "jobs", "description": "Enqueue work: one job or a batch of up to 1,000, each becoming an execution."},
    {"name": "workflows", "description": "Jobs with dependencies, made at once: a job waits for its parents, a "
                                         "parent's end settles its children in the same transaction; seen by "
                                         "state, cancelled and retried as one."},
    {"name": "executions", "description": "Executions as they are stored: list, show, their attempts, events and "
                                          "logs; cancel, retry and delete, one at a time or in bulk."},
    {"name": "callbacks", "description": "What a handler calls while it works on a dispatched execution, with the "
                                         "callback token of its dispatch (`CallbackToken`): complete, progress, "
                                         "heartbeat, logs, run-once steps."},
    {"name": "schedules", "description": "Cron schedules that fire executions: upsert, list, show, delete, trigger "
                                         "now, preview the next instants."},
    {"name": "queues", "description": "The queues executions wait in: counts and the age of the oldest due job; "
                                      "pause and resume claiming."},
    {"name": "events", "description": "The feed of every execution's transition events, resumable from a cursor "
                                      "without a gap: a page at a time, or as server-sent events."},
    {"name": "subscriptions", "description": "Subscribers of the event feed: each event they want is POSTed to them, "
                                             "signed (Standard Webhooks), at least once; their deliveries, sent "
                                             "again one by one or over a window (recover)."},
    {"name": "nodes", "description": "The live Jobwire nodes and their in-flight calls."},
    {"name": "api-keys", "description": "API keys kept in the database, with scopes and queues (admin only)."},
    {"name": "health", "description": "Liveness, readiness and Prometheus metrics: no credentials."},
    {"name": "dispatch", "description": "What Jobwire sends to a handler (the `webhooks` section): the signed POST of "
                                        "each attempt and the replies it understands."},
    {"name": "event-delivery", "description": "What Jobwire sends to a subscriber (the `webhooks` section): one "
                                              "signed POST per event, retried until a 2xx."},
]
