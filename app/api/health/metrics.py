"""A node's metrics as Prometheus text exposition (format 0.0.4)."""

from __future__ import annotations

from app.services.metrics import MetricsSnapshot

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OUTCOMES = ("succeeded", "accepted", "failed", "abandoned")


def render(m: MetricsSnapshot) -> str:
    out: list[str] = []

    def family(name: str, kind: str, help_text: str, samples: list[tuple[dict[str, str], float]]) -> None:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            out.append(f"{name}{{{text}}} {_number(value)}" if text else f"{name} {_number(value)}")

    c = m.counters
    family("jobwire_node_info", "gauge", "This node (its id changes at every start).", [({"node": m.node_id}, 1)])
    family("jobwire_queue_jobs", "gauge",
           "Executions of a queue by state: enqueued_due (claimable now unless the queue is paused), "
           "enqueued_scheduled (due later), processing, dead_letter.",
           [({"queue": q.queue, "state": state}, value) for q in m.queues
            for state, value in (("enqueued_due", q.due), ("enqueued_scheduled", q.scheduled),
                                 ("processing", q.processing), ("dead_letter", q.dead_letter))])
    family("jobwire_queue_oldest_due_age_seconds", "gauge",
           "Age of the queue's oldest due ENQUEUED execution, in database time (absent when none is due).",
           [({"queue": q.queue}, q.oldest_due_age_seconds) for q in m.queues
            if q.oldest_due_age_seconds is not None])
    family("jobwire_queue_paused", "gauge", "1 while the queue is paused.",
           [({"queue": q.queue}, int(q.paused)) for q in m.queues])
    family("jobwire_handler_calls_in_flight", "gauge", "HTTP calls to handlers this node has in flight.",
           [({}, m.in_flight)])
    family("jobwire_jobs_enqueued_total", "counter", "Executions created through this node's API.",
           [({}, c.jobs_enqueued)])
    family("jobwire_claims_total", "counter", "Claim statements this node's dispatcher ran.", [({}, c.claims)])
    family("jobwire_jobs_claimed_total", "counter", "Executions this node's dispatcher claimed.",
           [({}, c.jobs_claimed)])
    family("jobwire_handler_calls_total", "counter",
           "Handler calls this node made, by outcome: succeeded (2xx), accepted (202: the handler reports "
           "back), failed, abandoned (deadline passed, shutdown).",
           [({"outcome": o}, c.calls[o]) for o in OUTCOMES])
    family("jobwire_callback_completions_total", "counter",
           "Completion callbacks this node applied, by outcome.",
           [({"outcome": o}, c.completions[o]) for o in ("succeeded", "failed")])
    return "\n".join(out) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float | None) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)
