-- Named statements of workflows (job_workflows, job_dependencies and the workflow columns of
-- job_executions), parsed once by app/db/queries.py. The transitions of a workflow's jobs keep it
-- (counts, end, children) through jobwire_workflow_transitions, the trigger; these statements
-- make, link and steer workflows. Lock order everywhere: a workflow's jobs before its row, as the
-- trigger takes them; or its row alone, and after it no job of the workflow but those the
-- transaction makes (POST /v1/workflows/{id}/jobs). A workflow's counts (workflow_columns) are
-- its row's plus the moves appended beside it in job_workflow_deltas and not folded into the row
-- yet.

-- fragment: workflow_columns
w.id, w.name, w.metadata, w.state,
(SELECT COALESCE(jsonb_object_agg(c.state, c.n), '{}')
 FROM (SELECT k.state, sum(k.n) AS n
       FROM (SELECT j.key AS state, CAST(j.value AS int) AS n FROM jsonb_each_text(w.counts) AS j
             UNION ALL
             SELECT x.state, x.n FROM job_workflow_deltas x WHERE x.workflow_id = w.id) AS k
       GROUP BY k.state) AS c) AS counts,
w.jobs, w.created_at, w.updated_at, w.completed_at

-- fragment: terminal
('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED')

-- name: workflow_insert
-- A new workflow; nothing when its idempotency key is stored (the caller reads that one).
INSERT INTO job_workflows AS w (name, metadata, idempotency_key, request_hash)
VALUES (:name, CAST(:metadata AS jsonb), :idempotency_key, :request_hash)
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING $workflow_columns

-- name: workflow_by_key
SELECT $workflow_columns, w.request_hash FROM job_workflows w WHERE w.idempotency_key = :idempotency_key

-- name: workflow_get
SELECT $workflow_columns FROM job_workflows w WHERE w.id = :id

-- name: workflow_parents_share
-- POST {callback.url}/children, first: the jobs of the workflow its new jobs depend on (:refs),
-- share-locked in id order until commit, with their states (current: the lock waited for any
-- transition). A parent ending meanwhile is waited for (then seen terminal), or waits for this
-- transaction (then its trigger sees the new children).
SELECT e.id, e.workflow_ref AS ref, e.state FROM job_executions e
WHERE e.workflow_id = :workflow AND e.workflow_ref = ANY(CAST(:refs AS text[]))
ORDER BY e.id
FOR SHARE

-- name: workflow_lock
-- POST /v1/workflows/{id}/jobs, first: the row, locked until commit (its state and its number of
-- jobs are checked, then counted on). A job of the workflow that ends takes this row in the
-- trigger before its transaction can commit, so none ends while this lock is held: the parents'
-- states read after it (workflow_refs) are the ones to count on, with no lock on any of them (a
-- parent's end under way waits for this transaction, then its trigger sees the new children).
SELECT $workflow_columns FROM job_workflows w WHERE w.id = :id FOR NO KEY UPDATE

-- name: workflow_enqueue
-- The jobs of a workflow inserted through jobwire_enqueue (its checks, defaults and NOTIFY) with
-- their workflow columns: :refs and :policies by position, and for each with parents
-- (:pending set) WAITING with that many parents unfinished (workflow_settle then enqueues those
-- with none, or cancels those a failed parent dooms), and :spawned_by, the parent that spawned
-- them (POST {callback.url}/children), or NULL. No event row (DESIGN §8).
-- The rows are new (this transaction's): no trigger runs, workflow_account counts them.
SELECT f.ord, f.created, f.id, f.state
FROM jobwire_enqueue(CAST(:jobs AS jsonb), CAST(:workflow AS uuid), CAST(:refs AS text[]),
                     CAST(:policies AS text[]), CAST(:pending AS int[]), CAST(:spawned_by AS uuid)) AS f
ORDER BY f.ord

-- name: workflow_edges
-- The edges (:parents → :children, by id) of jobs workflow_enqueue just inserted, in key order.
INSERT INTO job_dependencies (parent_id, child_id)
SELECT x.parent_id, x.child_id
FROM unnest(CAST(:parents AS uuid[]), CAST(:children AS uuid[])) AS x(parent_id, child_id)
ORDER BY x.parent_id, x.child_id

-- name: workflow_account
-- New jobs in the workflow: its counts (:states, :ns), its jobs and its unfinished ones. Refused
-- (no row) when it is finished or would pass :max_jobs.
UPDATE job_workflows w
SET counts = w.counts || (SELECT jsonb_object_agg(c.state, COALESCE(CAST(w.counts->>c.state AS int), 0) + c.n)
                          FROM unnest(CAST(:states AS text[]), CAST(:ns AS int[])) AS c(state, n)),
    jobs = w.jobs + :added, unfinished = w.unfinished + :added, updated_at = now()
WHERE w.id = :id AND w.state = 'RUNNING' AND w.jobs + :added <= :max_jobs
RETURNING $workflow_columns

-- name: workflow_settle
-- The WAITING jobs of the workflow :workflow (of :ids only, when given) whose parents are settled:
-- one whose failed parent (DEAD_LETTER or CANCELLED) dooms it (policy `cancel`) is CANCELLED,
-- error_type dependency_failed naming that parent; one with no parent unfinished is ENQUEUED (due
-- at once, or at its run_at). The trigger carries on from them (descendants, counts, the end).
WITH t AS (
    SELECT e.id, f.ref AS failed_ref, f.id AS failed_id, f.state AS failed_state
    FROM job_executions e
    LEFT JOIN LATERAL (
        SELECT p.workflow_ref AS ref, p.id, p.state FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
        WHERE d.child_id = e.id AND p.state IN ('DEAD_LETTER', 'CANCELLED')
        ORDER BY p.id LIMIT 1) AS f ON e.on_dependency_failure = 'cancel'
    WHERE e.workflow_id = :workflow AND e.state = 'WAITING'
      AND (CAST(:ids AS uuid[]) IS NULL OR e.id = ANY(CAST(:ids AS uuid[])))
      AND (e.pending_parents = 0 OR f.id IS NOT NULL)
    ORDER BY e.id
    FOR UPDATE OF e
), u AS (
    UPDATE job_executions e
    SET state = CASE WHEN t.failed_id IS NOT NULL THEN 'CANCELLED' ELSE 'ENQUEUED' END,
        scheduled_at = CASE WHEN t.failed_id IS NULL THEN GREATEST(e.scheduled_at, now()) ELSE e.scheduled_at END,
        completed_at = CASE WHEN t.failed_id IS NOT NULL THEN now() END,
        error_type = CASE WHEN t.failed_id IS NOT NULL THEN 'dependency_failed' END,
        last_error = CASE WHEN t.failed_id IS NOT NULL
                          THEN format('dependency %s (execution %s) ended %s', t.failed_ref, t.failed_id,
                                      t.failed_state) END,
        updated_at = now()
    FROM t
    WHERE e.id = t.id AND e.state = 'WAITING'
    RETURNING e.*
), ev AS (
    INSERT INTO job_events (execution_id, event, type)
    SELECT u.id, $EVENT(u, u.state, u.attempt), CASE WHEN u.state = 'CANCELLED' THEN 'execution.cancelled' END FROM u
)
SELECT count(*) FILTER (WHERE u.state = 'ENQUEUED' AND u.scheduled_at <= now()) AS due FROM u

-- name: workflow_items
-- The jobs :ids as POST /v1/workflows answers them, in the order asked.
SELECT e.workflow_ref AS ref, e.id AS execution_id, e.state
FROM unnest(CAST(:ids AS uuid[])) WITH ORDINALITY AS i(id, ord) JOIN job_executions e ON e.id = i.id
ORDER BY i.ord

-- name: workflow_refs
-- The jobs of the workflow among :refs, with their states (POST /v1/workflows/{id}/jobs, under
-- workflow_lock: a new ref must be new, a parent must be known, and counts while unfinished).
SELECT e.workflow_ref AS ref, e.id, e.state FROM job_executions e
WHERE e.workflow_id = :workflow AND e.workflow_ref = ANY(CAST(:refs AS text[]))

-- name: workflow_jobs_page
-- GET /v1/workflows/{id}/jobs: keyset by ref (uq_job_executions_workflow_ref), with each job's
-- parents by ref.
SELECT e.workflow_ref AS ref, e.id AS execution_id, e.state, e.queue,
       ARRAY(SELECT p.workflow_ref FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
             WHERE d.child_id = e.id ORDER BY p.workflow_ref) AS depends_on
FROM job_executions e
WHERE e.workflow_id = :workflow AND e.workflow_ref > :after
  AND (CAST(:state AS text) IS NULL OR e.state = :state)
ORDER BY e.workflow_ref
LIMIT :limit

-- name: workflow_queues
-- The queues of a workflow's jobs (a key limited to queues sees a workflow whose jobs are all in its).
SELECT DISTINCT e.queue FROM job_executions e WHERE e.workflow_id = :workflow

-- name: workflows_page
-- GET /v1/workflows: newest first, keyset (created_at, id) after the cursor; filters :state and
-- :name; :queues (a key limited to queues) keeps the workflows whose jobs are all in them.
SELECT $workflow_columns
FROM job_workflows w
WHERE (CAST(:state AS text) IS NULL OR w.state = :state)
  AND (CAST(:name AS text) IS NULL OR w.name = :name)
  AND (CAST(:after_created AS timestamptz) IS NULL
       OR (w.created_at, w.id) < (CAST(:after_created AS timestamptz), CAST(:after_id AS uuid)))
  AND (CAST(:queues AS text[]) IS NULL
       OR NOT EXISTS (SELECT 1 FROM job_executions e
                      WHERE e.workflow_id = w.id AND e.queue <> ALL(CAST(:queues AS text[]))))
ORDER BY w.created_at DESC, w.id DESC
LIMIT :limit

-- name: workflow_cancel_jobs
-- POST /v1/workflows/{id}/cancel: every unfinished job (:from_states) CANCELLED, as a user's
-- cancel of each (executions.sql's cancel_selected).
WITH t AS (
    SELECT e.id, e.state AS was FROM job_executions e
    WHERE e.workflow_id = :workflow AND e.state = ANY(CAST(:from_states AS text[]))
    ORDER BY e.id
    FOR UPDATE
), $cancel_selected

-- name: workflow_rewait
-- POST /v1/workflows/{id}/retry, first: the jobs a failed dependency cancelled wait again, each
-- counting its parents not terminal now (the parents retried next count again through the
-- trigger). An event each.
WITH t AS (
    SELECT e.id FROM job_executions e
    WHERE e.workflow_id = :workflow AND e.state = ANY(CAST(:from_states AS text[]))
      AND e.error_type = 'dependency_failed'
    ORDER BY e.id
    FOR UPDATE
), u AS (
    UPDATE job_executions e
    SET state = 'WAITING', completed_at = NULL, error_type = NULL, last_error = NULL, updated_at = now(),
        pending_parents = (SELECT count(*) FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
                           WHERE d.child_id = e.id AND p.state NOT IN $terminal)
    FROM t
    WHERE e.id = t.id AND e.state = ANY(CAST(:from_states AS text[]))
    RETURNING e.*
), ev AS (
    INSERT INTO job_events (execution_id, event) SELECT u.id, $EVENT(u, u.state, u.attempt) FROM u
)
SELECT count(*) AS n FROM u

-- name: workflow_retry_dead
-- POST /v1/workflows/{id}/retry, second: its dead-lettered jobs run again, each as a manual retry
-- (a new attempt, due now, max_attempts raised if spent; typed execution.retried).
WITH t AS (
    SELECT e.id FROM job_executions e
    WHERE e.workflow_id = :workflow AND e.state = ANY(CAST(:from_states AS text[]))
    ORDER BY e.id
    FOR UPDATE
), u AS (
    UPDATE job_executions e
    SET state = 'ENQUEUED', attempt = e.attempt + 1, max_attempts = GREATEST(e.max_attempts, e.attempt + 2),
        scheduled_at = now(), started_at = NULL, completed_at = NULL, deadline_at = NULL,
        locked_by = NULL, updated_at = now()
    FROM t
    WHERE e.id = t.id AND e.state = ANY(CAST(:from_states AS text[]))
    RETURNING $E_COLUMNS
), ev AS (
    INSERT INTO job_events (execution_id, event, type)
    SELECT u.id, $EVENT(u, u.state, u.attempt), 'execution.retried' FROM u
)
SELECT count(*) AS n FROM u

-- name: workflow_parents_page
-- GET {callback.url}/parents: the execution's parents by ref after :after, with their results.
SELECT p.workflow_ref AS ref, p.id AS execution_id, p.state, p.result
FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
WHERE d.child_id = :id AND p.workflow_ref > :after
ORDER BY p.workflow_ref
LIMIT :limit

-- name: execution_unfinished_parents
-- A WAITING job's parents not terminal yet, by ref (its blockers: `dependencies`).
SELECT p.workflow_ref AS ref
FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
WHERE d.child_id = :id AND p.state NOT IN $terminal
ORDER BY p.workflow_ref

-- fragment: spawn_parent_columns
e.id, e.attempt, e.state, e.handler, e.workflow_id, e.workflow_ref

-- name: spawn_parent_seen
-- POST {callback.url}/children, first: the parent as it is, unlocked (its workflow and ref name
-- the children its new ones may depend on, share-locked next).
SELECT $spawn_parent_columns FROM job_executions e WHERE e.id = :id

-- name: spawn_parent
-- POST {callback.url}/children, then: the parent, locked, with its attempt, state and workflow.
-- Lock order: the spawned children its new ones depend on, the parent, its workflow's row, as a
-- child's end takes them (its row, its parent's, its workflow's).
SELECT $spawn_parent_columns FROM job_executions e WHERE e.id = :id
FOR NO KEY UPDATE

-- name: spawn_adopt
-- A parent outside workflows that spawns children: a workflow is made for it (named after its
-- handler), holding it (:state, its ref :ref). No trigger counts it (it moved no state):
-- the new workflow's counts start with it.
WITH w AS (
    INSERT INTO job_workflows AS w (name, counts, jobs, unfinished)
    VALUES (:name, jsonb_build_object(CAST(:state AS text), 1), 1, 1)
    RETURNING w.id
), u AS (
    UPDATE job_executions e
    SET workflow_id = w.id, workflow_ref = :ref, on_dependency_failure = 'cancel', pending_parents = 0
    FROM w
    WHERE e.id = :id AND e.workflow_id IS NULL
    RETURNING e.workflow_id
)
SELECT u.workflow_id FROM u

-- name: spawned
-- The children :id spawned whose refs (in the workflow) are :refs, as POST {callback.url}/children
-- answers them.
SELECT e.workflow_ref AS ref, e.id AS execution_id, e.state
FROM job_executions e
WHERE e.spawned_by = :id AND e.workflow_ref = ANY(CAST(:refs AS text[]))

-- name: spawned_page
-- GET {callback.url}/children: the children the execution spawned by ref (as it named them) after
-- :after, with their results.
SELECT substr(e.workflow_ref, length(p.workflow_ref) + 2) AS ref, e.id AS execution_id, e.state, e.result
FROM job_executions p JOIN job_executions e ON e.spawned_by = p.id
WHERE p.id = :id AND e.workflow_ref > p.workflow_ref || '/' || :after
ORDER BY e.workflow_ref
LIMIT :limit
