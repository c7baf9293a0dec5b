"""Which requests the client sends again after a reply that may have been lost: one table, one
row per operation of the API (its operationId).

Two kinds of failure differ. One proves nothing was done: the connection was refused or never
made (nothing was sent), or Jobwire itself answered 503 (a problem document: it did not process
the request). After it, every request may be tried again. The other proves nothing either way:
the request went out, then the connection dropped or the read timed out (or something other than
Jobwire answered 503). Jobwire may have applied it. A request is sent again after that only when
doing it twice does no more than doing it once: a read, a DELETE, a PUT of a whole definition, an
enqueue or a workflow's creation (which always carry an idempotency key) unless it debounces, a
pause or resume, a bulk cancel or delete of given ids, a bulk action's dry run, a subscription's
recover. The others raise `Unavailable` with `maybe_applied` set, saying how to find out.

A DELETE sent again may find its target gone: a 404 then means what was asked holds, and the
call returns as if the first reply had arrived.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Resend:
    """`safe`: sending it twice does no more than once. Otherwise `reason` says why not and
    `advice` what to do (both may name `{path}`, the request's path, and `{name}`, the resource's
    name or id as the caller gave it)."""

    safe: bool
    reason: str = ""
    advice: str = ""
    safe_with_ids: bool = False  # a bulk action: safe when it names its executions by `ids`
    gone_is_done: bool = False  # a DELETE: a 404 to the second try means the first did it
    with_field: tuple[str, Resend] | None = None  # the rule instead when the body has this field


SAFE = Resend(True)
DELETE = Resend(True, gone_is_done=True)


def unsafe(reason: str, advice: str, *, safe_with_ids: bool = False,
           with_field: tuple[str, Resend] | None = None) -> Resend:
    return Resend(False, reason, advice, safe_with_ids=safe_with_ids, with_field=with_field)


DRY_RUN = ("dry_run", SAFE)  # a bulk action's dry run (the body says `dry_run` only when true) changes nothing


_BULK_BY_FILTER = ("a bulk action by filter selects the executions that match when it runs, and a second run "
                   "would select others")
_BULK_ADVICE = ("List what the filter matches now (client.executions.list) to see whether it was applied, and "
                "send it again if that is what you want; a bulk action by `ids` is sent again by itself")

RESEND: Mapping[str, Resend] = {
    # handlers
    "putHandler": unsafe(
        "a PUT that creates the handler shows its signing secret in that reply only",
        "GET {path} (client.handlers.get): if the handler exists with your URL, the PUT was applied and, had "
        "it created the handler, its first secret was in the lost reply: add one with POST {path}/secrets "
        "(client.handlers.add_secret) and give that to the handler; if it does not exist, send the PUT again"),
    "getHandler": SAFE,
    "listHandlers": SAFE,
    "deleteHandler": DELETE,
    "addHandlerSecret": unsafe(
        "each POST adds another secret, shown in its reply only",
        "GET the handler (client.handlers.get): a secret you do not know in its `secrets` was added by the lost "
        "request; delete it (client.handlers.delete_secret) and add another"),
    "deleteHandlerSecret": DELETE,
    # a handler's concurrency keys: pausing a paused key changes nothing
    "listHandlerKeys": SAFE,
    "pauseHandlerKey": SAFE,
    "resumeHandlerKey": SAFE,
    # jobs: every enqueue carries an idempotency key (the caller's or the client's), so a second
    # try returns the execution the first one stored. Not a debounced one: the key is stored only
    # with an execution it makes; one that went to the waiting execution leaves none, and sent
    # again once that execution has started (or, leading, its window has passed) it makes another.
    "enqueueJob": Resend(True, with_field=("debounce", unsafe(
        "a debounced enqueue that went to the waiting execution stores no idempotency key, and sent again once "
        "that execution has started (or, leading, its window has passed) it would make another",
        "List the handler's executions (client.executions.list(handler=\"{name}\")): one still ENQUEUED with "
        "your payload (trailing), or one started in the window (leading), took the enqueue; enqueue again if "
        "none did"))),
    "enqueueJobs": SAFE,
    # workflows: a create carries an idempotency key (the caller's or the client's), so a second try
    # answers the workflow the first one stored. Jobs added to one carry none of their own: sent
    # again, their refs are in the workflow already.
    "createWorkflow": SAFE,
    "addWorkflowJobs": unsafe(
        "a second add of the same jobs is refused (422: their refs are in the workflow already), which would say "
        "the add failed",
        "List the workflow's jobs (client.workflows.jobs {name}): if your refs are there, the add was applied; "
        "otherwise add them again"),
    "getWorkflow": SAFE,
    "listWorkflows": SAFE,
    "listWorkflowJobs": SAFE,
    "cancelWorkflow": unsafe(
        "a second cancel of a cancelled workflow is refused (409), which would say the cancel failed",
        "GET the workflow (client.workflows.get {name}): CANCELLED, or another end, means it is no longer running "
        "(the cancel was applied, or it ended first); if it is still RUNNING, cancel again"),
    "retryWorkflow": unsafe(
        "a second retry is refused (409) when the first left nothing to retry, which would say the retry failed, "
        "and retries again the jobs that have failed again since",
        "GET the workflow (client.workflows.get {name}): RUNNING, with fewer DEAD_LETTER and CANCELLED jobs in its "
        "counts than before, means the retry was applied; otherwise retry again"),
    # executions
    "getExecution": SAFE,
    "listExecutions": SAFE,
    "listExecutionLogs": SAFE,
    "listExecutionAttempts": SAFE,
    "listExecutionEvents": SAFE,
    "listExecutionBlockers": SAFE,
    "deleteExecution": DELETE,
    "cancelExecution": unsafe(
        "a second cancel of a cancelled execution is refused (409), which would say the cancel failed",
        "GET the execution (client.executions.get {name}): CANCELLED means the cancel was applied; if it is "
        "still ENQUEUED or PROCESSING, cancel again"),
    "retryExecution": unsafe(
        "each retry starts a new attempt: a second one is refused (409) while the first is queued, and "
        "retries the execution again if that attempt has already failed",
        "GET the execution (client.executions.get {name}): an attempt higher than before, or a state other "
        "than DEAD_LETTER or CANCELLED, means the retry was applied; otherwise retry again"),
    # A signal is a message: each POST stores another one, which a wait consumes (and a second copy
    # would wake a later wait that names it). A list is a read.
    "sendSignal": unsafe(
        "each signal sent is stored again: a second copy would be kept, and wake the next wait that names it",
        "List the execution's signals (client.executions.signals {name}): one of that name sent just now is the "
        "lost request's; send it again if there is none"),
    "listSignals": SAFE,
    "bulkCancelExecutions": unsafe(_BULK_BY_FILTER, _BULK_ADVICE, safe_with_ids=True, with_field=DRY_RUN),
    "bulkDeleteExecutions": unsafe(_BULK_BY_FILTER, _BULK_ADVICE, safe_with_ids=True, with_field=DRY_RUN),
    # Not even by ids: a row the lost try re-enqueued that has failed again since would be retried
    # a second time, as with /retry.
    "bulkRetryExecutions": unsafe(
        "a bulk retry starts a new attempt for each execution it changes, and a second run would retry again "
        "those whose new attempt has already failed (by filter, it would also select others)",
        "List the executions (client.executions.list, or get each of the ids): those ENQUEUED or with a higher "
        "attempt were retried; send the bulk retry again for the others", with_field=DRY_RUN),
    # the event feed and its stream: reads (a stream reconnects by itself, from its last event)
    "listEvents": SAFE,
    "streamEvents": SAFE,
    # event subscriptions: as handlers, whose secrets they share the rules of
    "putSubscription": unsafe(
        "a PUT that creates the subscription shows its signing secret in that reply only",
        "GET {path} (client.subscriptions.get): if the subscription exists with your URL, the PUT was applied "
        "and, had it created the subscription, its first secret was in the lost reply: add one with POST "
        "{path}/secrets (client.subscriptions.add_secret) and give that to the subscriber; if it does not exist, "
        "send the PUT again"),
    "getSubscription": SAFE,
    "listSubscriptions": SAFE,
    "deleteSubscription": DELETE,
    "addSubscriptionSecret": unsafe(
        "each POST adds another secret, shown in its reply only",
        "GET the subscription (client.subscriptions.get): a secret you do not know in its `secrets` was added by "
        "the lost request; delete it (client.subscriptions.delete_secret) and add another"),
    "deleteSubscriptionSecret": DELETE,
    "listSubscriptionDeliveries": SAFE,
    "resendDelivery": unsafe(
        "a second resend is refused (409) while a node sends the first, which would say the resend failed, "
        "and sends the event once more if the first was already delivered",
        "List the subscription's deliveries (client.subscriptions.deliveries): if delivery {name} was tried after "
        "your request, or waits for its next try now, the resend was applied; otherwise resend it again"),
    # A recover opens one delivery per event of the window, or opens the same one again: sent twice,
    # it sends again only what the first sent, with the same webhook-id (at least once allows it).
    "recoverSubscription": SAFE,
    # schedules: a PUT is the whole definition
    "putSchedule": SAFE,
    "getSchedule": SAFE,
    "listSchedules": SAFE,
    "deleteSchedule": DELETE,
    "previewSchedule": SAFE,
    "triggerSchedule": unsafe(
        "each trigger fires the schedule once more",
        "List the schedule's executions (client.executions.list(job_id={name})): a CRON execution created "
        "just now is the lost trigger's; trigger again if there is none"),
    # queues: pausing a paused queue changes nothing
    "listQueues": SAFE,
    "pauseQueue": SAFE,
    "resumeQueue": SAFE,
    "listNodes": SAFE,
    # API keys
    "createApiKey": unsafe(
        "each POST creates another key, shown in its reply only",
        "List the keys (client.api_keys.list): a key named as yours that you do not hold was created by the "
        "lost request; delete it (client.api_keys.delete) and create another"),
    "listApiKeys": SAFE,
    "deleteApiKey": DELETE,
    # health
    "health": SAFE,
    "readiness": SAFE,
    "metrics": SAFE,
}


def rule_for(operation: str, body: Any) -> Resend:
    """The row of `operation`, for a request with this body (a bulk action naming `ids` is safe, an
    enqueue with `debounce` is not)."""
    rule = RESEND[operation]
    if rule.safe_with_ids and isinstance(body, dict) and body.get("ids") is not None:
        return SAFE
    if rule.with_field is not None and isinstance(body, dict) and body.get(rule.with_field[0]) is not None:
        return rule.with_field[1]
    return rule
