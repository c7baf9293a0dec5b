-- Workflows kept in step with their jobs, in the transaction of each transition (DESIGN §9): the
-- trigger jobwire_workflow_transitions, AFTER UPDATE ON job_executions FOR EACH STATEMENT, with the
-- statement's rows before (old_rows) and after (new_rows). A statement that moves no job of a
-- workflow (every statement of a job outside workflows) looks at its rows once and returns. For
-- the jobs of workflows whose state it changed, set-based, once per statement:
-- 0. moves that change no job's terminal-ness and touch no WAITING job (claims, ENQUEUED →
--    PROCESSING, and the like) take no lock: their net count per workflow and state is appended
--    to job_workflow_deltas (readers add it to the row's counts), and the statement is done;
-- 1. each workflow's counts by state (the deltas appended so far folded in), its unfinished jobs
--    (not SUCCEEDED, DEAD_LETTER or CANCELLED) and those a user cancelled (one update per workflow, their rows locked in id
--    order); a workflow ends when none is unfinished (CANCELLED when a user cancelled one, FAILED
--    when one was dead-lettered or cancelled by a failed dependency, else SUCCEEDED) with its event
--    (workflow.succeeded|failed|cancelled), and runs again when one is unfinished again (a retry);
-- 2. the children of the jobs that became terminal. For a parent that ended DEAD_LETTER or
--    CANCELLED, every WAITING descendant reached through children whose policy is `cancel` is
--    CANCELLED (error_type dependency_failed, naming its parent that failed), however deep. Then
--    each WAITING child counts its parents that ended; at none left it is ENQUEUED (due at once,
--    or at its own run_at; no event row, as for an insert: DESIGN §8). A job that stops being
--    terminal (a retry) counts again for its WAITING children. A child's count is written under
--    its row lock: two parents of one child ending at once on two nodes queue on it, and the
--    second sees the first's count (one enqueues it). The release counts its own moves (WAITING
--    → ENQUEUED) in its workflows' rows, locked in step 1, and the trigger it fires returns at
--    once (jobwire.releasing, set for that statement alone): its moves are only those, and the
--    whole trigger for them (the rows read into arrays, the counts folded) was a seventh of a
--    release's time (bench/README.md, 2026-12-08).
-- 3. the parents of spawned jobs that became terminal (POST {callback.url}/children): one WAITING
--    for all its children (suspend `children: "all"`) with none unfinished now is resumed in this
--    transaction (reason `children`: ENQUEUED, due now, the same attempt, its event, a NOTIFY).
--    Its row is locked before the workflows' rows, whatever it waits for: its suspend holds that
--    lock while it counts its unfinished children, so one of the two sees the other's work. (A
--    signal it names cannot be waiting: one there at its suspend, or sent since, resumed it.)
-- The statements on the children fire this trigger again, one level down, for their own rows.
-- The rows that moved are read from the transition tables once, into arrays the other statements
-- unnest (one pass of the aggregates over the rows sorted once: the arrays align row by row; an
-- ORDER BY in each aggregate sorted them seven times): past 64 rows by a statement planned for
-- their number (EXECUTE: a cached plan made for a few rows would join 10,000 with 10,000 by nested
-- loops), else by one whose plan is cached.
-- The other statements use their generic plans (plan_cache_mode): planned again for each call
-- (custom plans, the plan cache's choice for their array parameters), they cost a children's
-- outcome batch a fifth of the trigger's time; each walks indexes from the arrays it unnests.
CREATE OR REPLACE FUNCTION jobwire_workflow_transitions()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
SET TimeZone = 'UTC'
SET plan_cache_mode = force_generic_plan
AS $function$
DECLARE
    ids uuid[];
    workflows uuid[];
    refs text[];
    spawners uuid[];
    was text[];
    now_state text[];
    by_user int[];
    touched uuid[];
    ends boolean;  -- a job became terminal, or stopped being terminal
    spawned boolean;  -- a job a handler spawned moved
    released int;
    resumed int;
    children uuid[];  -- the WAITING children whose parents' ends moved, and by how many (child_ends)
    child_ends jsonb;
BEGIN
    IF current_setting('jobwire.releasing', true) = 'on' THEN  -- step 2's release: it counted itself
        RETURN NULL;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.workflow_id IS NOT NULL) THEN
        RETURN NULL;
    END IF;
    IF (SELECT count(*) FROM new_rows) > 64 THEN
    EXECUTE $moved$
        SELECT array_agg(x.id), array_agg(x.workflow_id), array_agg(x.workflow_ref), array_agg(x.spawned_by),
               array_agg(x.was), array_agg(x.now), array_agg(x.by_user)
        FROM (SELECT n.id, n.workflow_id, n.workflow_ref, n.spawned_by, o.state AS was, n.state AS now,
                     CASE WHEN n.state = 'CANCELLED' AND n.error_type IS DISTINCT FROM 'dependency_failed'
                          THEN 1 ELSE 0 END
                     - CASE WHEN o.state = 'CANCELLED' AND o.error_type IS DISTINCT FROM 'dependency_failed'
                            THEN 1 ELSE 0 END AS by_user
              FROM new_rows n JOIN old_rows o ON o.id = n.id
              WHERE o.workflow_id IS NOT NULL AND o.state IS DISTINCT FROM n.state
              ORDER BY n.id) AS x
    $moved$ INTO ids, workflows, refs, spawners, was, now_state, by_user;
    ELSE
        SELECT array_agg(x.id), array_agg(x.workflow_id), array_agg(x.workflow_ref), array_agg(x.spawned_by),
               array_agg(x.was), array_agg(x.now), array_agg(x.by_user)
        INTO ids, workflows, refs, spawners, was, now_state, by_user
        FROM (SELECT n.id, n.workflow_id, n.workflow_ref, n.spawned_by, o.state AS was, n.state AS now,
                     CASE WHEN n.state = 'CANCELLED' AND n.error_type IS DISTINCT FROM 'dependency_failed'
                          THEN 1 ELSE 0 END
                     - CASE WHEN o.state = 'CANCELLED' AND o.error_type IS DISTINCT FROM 'dependency_failed'
                            THEN 1 ELSE 0 END AS by_user
              FROM new_rows n JOIN old_rows o ON o.id = n.id
              WHERE o.workflow_id IS NOT NULL AND o.state IS DISTINCT FROM n.state
              ORDER BY n.id) AS x;
    END IF;
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    touched := ARRAY(SELECT DISTINCT w FROM unnest(workflows) AS w ORDER BY w);
    ends := EXISTS (SELECT 1 FROM unnest(was, now_state) AS m(was, now)
                    WHERE (m.was IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
                          <> (m.now IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED')));

    -- 0. No end, no WAITING: the counts' moves appended, no row lock (a claim is this).
    IF NOT ends AND NOT EXISTS (SELECT 1 FROM unnest(was, now_state) AS m(was, now)
                                WHERE m.was = 'WAITING' OR m.now = 'WAITING') THEN
        INSERT INTO job_workflow_deltas (workflow_id, state, n)
        SELECT m.workflow_id, s.state, sum(s.d)
        FROM unnest(workflows, was, now_state) AS m(workflow_id, was, now),
             LATERAL (VALUES (m.was, -1), (m.now, 1)) AS s(state, d)
        GROUP BY m.workflow_id, s.state
        HAVING sum(s.d) <> 0;
        RETURN NULL;
    END IF;

    -- 3, first: the parents of spawned jobs that ended, locked in id order before the workflows.
    -- (Here and below, a statement with nothing to do is skipped by a test of the arrays: each
    -- one a children's outcome batch runs for nothing costs its planning and its start.)
    spawned := cardinality(array_remove(spawners, NULL)) > 0;
    IF ends AND spawned THEN
        PERFORM 1 FROM job_executions p
        WHERE p.id IN (SELECT m.spawner FROM unnest(spawners, was, now_state) AS m(spawner, was, now)
                       WHERE m.spawner IS NOT NULL AND m.now IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED')
                         AND m.was NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
        ORDER BY p.id
        FOR NO KEY UPDATE;
    END IF;

    -- 1. The workflows, locked in id order, counted, ended or running again.
    PERFORM 1 FROM job_workflows w WHERE w.id = ANY(touched) ORDER BY w.id FOR NO KEY UPDATE;
    WITH moved AS (
        SELECT m.workflow_id, m.was, m.now,
               m.was IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED') AS was_done,
               m.now IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED') AS is_done, m.by_user
        FROM unnest(workflows, was, now_state, by_user) AS m(workflow_id, was, now, by_user)
    ), folded AS (  -- the moves step 0 appended, folded into the row under its lock
        DELETE FROM job_workflow_deltas f WHERE f.workflow_id = ANY(touched)
        RETURNING f.workflow_id, f.state, f.n
    ), deltas AS (
        SELECT x.workflow_id, jsonb_object_agg(x.state, x.d) AS d
        FROM (SELECT y.workflow_id, y.state, sum(y.d) AS d
              FROM (SELECT m.workflow_id, s.state, s.d
                    FROM moved m, LATERAL (VALUES (m.was, -1), (m.now, 1)) AS s(state, d)
                    UNION ALL
                    SELECT f.workflow_id, f.state, f.n FROM folded f) AS y
              GROUP BY y.workflow_id, y.state) AS x
        GROUP BY x.workflow_id
    ), per AS (
        SELECT m.workflow_id,
               sum(CASE WHEN m.was_done AND NOT m.is_done THEN 1 WHEN m.is_done AND NOT m.was_done THEN -1
                        ELSE 0 END) AS unfinished,
               sum(m.by_user) AS by_user
        FROM moved m GROUP BY m.workflow_id
    )
    UPDATE job_workflows w
    SET counts = (SELECT COALESCE(jsonb_object_agg(k.key, COALESCE(CAST(w.counts->>k.key AS int), 0)
                                                        + COALESCE(CAST(d.d->>k.key AS int), 0)), '{}')
                  FROM jsonb_object_keys(w.counts || d.d) AS k(key)),
        unfinished = w.unfinished + p.unfinished, cancelled_by_user = w.cancelled_by_user + p.by_user,
        updated_at = now()
    FROM deltas d JOIN per p ON p.workflow_id = d.workflow_id
    WHERE w.id = d.workflow_id;
    IF NOT ends THEN  -- claims, retries, releases: only the counts moved
        RETURN NULL;
    END IF;
    IF 'SUCCEEDED' = ANY(was) OR 'DEAD_LETTER' = ANY(was) OR 'CANCELLED' = ANY(was) THEN  -- a job may run again
        UPDATE job_workflows w SET state = 'RUNNING', completed_at = NULL
        WHERE w.id = ANY(touched) AND w.unfinished > 0 AND w.state <> 'RUNNING';
    END IF;
    WITH ended AS (
        UPDATE job_workflows w
        SET state = CASE WHEN w.cancelled_by_user > 0 THEN 'CANCELLED'
                         WHEN COALESCE(CAST(w.counts->>'DEAD_LETTER' AS int), 0) > 0
                              OR COALESCE(CAST(w.counts->>'CANCELLED' AS int), 0) > 0 THEN 'FAILED'
                         ELSE 'SUCCEEDED' END,
            completed_at = now()
        WHERE w.id = ANY(touched) AND w.unfinished = 0 AND w.state = 'RUNNING'
        RETURNING w.*
    )
    INSERT INTO job_events (execution_id, event, type)
    SELECT e.id,
           jsonb_build_object('workflow_id', e.id, 'name', e.name, 'state', e.state,
                              'counts', (SELECT COALESCE(jsonb_object_agg(c.key, c.value), '{}')
                                         FROM jsonb_each(e.counts) AS c WHERE c.value <> '0'),
                              'metadata', e.metadata, 'created_at', e.created_at, 'completed_at', e.completed_at),
           'workflow.' || lower(e.state)
    FROM ended e ORDER BY e.id;

    -- 3. The parents waiting for all their spawned children, once none is unfinished: resumed.
    IF spawned THEN
        WITH ready AS (
            SELECT p.id FROM job_executions p JOIN job_waits w ON w.execution_id = p.id
            WHERE p.id IN (SELECT m.spawner FROM unnest(spawners, now_state) AS m(spawner, now)
                           WHERE m.spawner IS NOT NULL AND m.now IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
              AND w.children AND w.resumed_at IS NULL
              AND p.state = 'WAITING' AND p.suspensions IS NOT NULL AND p.pending_parents IS NULL
              AND NOT EXISTS (SELECT 1 FROM job_executions c
                              WHERE c.spawned_by = p.id AND c.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
        ), waits AS (
            UPDATE job_waits w SET resumed_at = now(), reason = 'children', delivered = CAST('[]' AS jsonb)
            FROM ready r WHERE w.execution_id = r.id
        ), u AS (
            UPDATE job_executions e
            SET state = 'ENQUEUED', scheduled_at = now(), wake_at = NULL, updated_at = now()
            FROM ready r
            WHERE e.id = r.id AND e.state = 'WAITING'
            RETURNING e.id, e.job_id, e.job_type, e.queue, e.handler, e.state, e.attempt, e.max_attempts, e.error_type,
                      e.scheduled_at, e.created_at, e.started_at, e.completed_at, e.metadata
        ), ev AS (
            INSERT INTO job_events (execution_id, event)
            SELECT u.id, jsonb_build_object('execution_id', u.id, 'job_id', u.job_id, 'job_type', u.job_type,
                                            'queue', u.queue, 'handler', u.handler, 'new_state', u.state,
                                            'attempt', u.attempt, 'max_attempts', u.max_attempts,
                                            'error_type', u.error_type, 'scheduled_at', u.scheduled_at,
                                            'created_at', u.created_at, 'started_at', u.started_at,
                                            'completed_at', u.completed_at, 'metadata', u.metadata)
            FROM u
        )
        SELECT count(*) INTO resumed FROM u;
        IF resumed > 0 THEN
            PERFORM pg_notify((SELECT m.value FROM job_meta m WHERE m.key = 'notify_channel'), '');
        END IF;
    END IF;

    -- 2. The children of the jobs that became terminal (or stopped being terminal).
    IF 'DEAD_LETTER' = ANY(now_state) OR 'CANCELLED' = ANY(now_state) THEN
        WITH RECURSIVE doomed(id, ref, via_ref, via_id, via_state) AS (
            SELECT c.id, c.workflow_ref, m.ref, m.id, m.now
            FROM unnest(ids, refs, was, now_state) AS m(id, ref, was, now)
            JOIN job_dependencies d ON d.parent_id = m.id
            JOIN job_executions c ON c.id = d.child_id
            WHERE m.now IN ('DEAD_LETTER', 'CANCELLED') AND m.was NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED')
              AND c.state || '' = 'WAITING' AND c.on_dependency_failure = 'cancel' AND c.pending_parents IS NOT NULL
            UNION
            SELECT c.id, c.workflow_ref, x.ref, x.id, 'CANCELLED'
            FROM doomed x JOIN job_dependencies d ON d.parent_id = x.id
            JOIN job_executions c ON c.id = d.child_id
            WHERE c.state || '' = 'WAITING' AND c.on_dependency_failure = 'cancel' AND c.pending_parents IS NOT NULL
        ), u AS (
            UPDATE job_executions e
            SET state = 'CANCELLED', completed_at = now(), updated_at = now(), locked_by = NULL,
                error_type = 'dependency_failed',
                last_error = format('dependency %s (execution %s) ended %s', t.via_ref, t.via_id, t.via_state)
            FROM (SELECT DISTINCT ON (x.id) x.id, x.via_ref, x.via_id, x.via_state FROM doomed x
                  ORDER BY x.id, x.via_id) AS t
            WHERE e.id = t.id AND e.state = 'WAITING'
            RETURNING e.id, e.job_id, e.job_type, e.queue, e.handler, e.state, e.attempt, e.max_attempts, e.error_type,
                      e.scheduled_at, e.created_at, e.started_at, e.completed_at, e.metadata
        )
        INSERT INTO job_events (execution_id, event, type)
        SELECT u.id, jsonb_build_object('execution_id', u.id, 'job_id', u.job_id, 'job_type', u.job_type,
                                        'queue', u.queue, 'handler', u.handler, 'new_state', u.state,
                                        'attempt', u.attempt, 'max_attempts', u.max_attempts,
                                        'error_type', u.error_type, 'scheduled_at', u.scheduled_at,
                                        'created_at', u.created_at, 'started_at', u.started_at,
                                        'completed_at', u.completed_at, 'metadata', u.metadata),
               'execution.cancelled'
        FROM u ORDER BY u.id;
    END IF;
    -- Each WAITING child (waiting for parents: pending_parents set) counts its parents that ended,
    -- and again those that stopped being terminal: the children and their counts first, then the
    -- children by id alone, no join (told by the statistics that there were few WAITING rows, the
    -- planner scanned them and joined each with the counts: quadratic in the children; so it does
    -- still, joined to the counts unnested from an array, when the table has no statistics yet).
    SELECT array_agg(x.child_id ORDER BY x.child_id), jsonb_object_agg(x.child_id, x.n)
    INTO children, child_ends
    FROM (SELECT d.child_id,
                 sum(CASE WHEN m.now IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED') THEN 1 ELSE -1 END) AS n
          FROM unnest(ids, was, now_state) AS m(id, was, now)
          JOIN job_dependencies d ON d.parent_id = m.id
          WHERE (m.was IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
                <> (m.now IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
          GROUP BY d.child_id) AS x;
    IF children IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('jobwire.releasing', 'on', true);
    WITH u AS (
        UPDATE job_executions e
        SET pending_parents = e.pending_parents - CAST(child_ends->>CAST(e.id AS text) AS int),
            state = CASE WHEN e.pending_parents - CAST(child_ends->>CAST(e.id AS text) AS int) <= 0
                         THEN 'ENQUEUED' ELSE 'WAITING' END,
            scheduled_at = CASE WHEN e.pending_parents - CAST(child_ends->>CAST(e.id AS text) AS int) <= 0
                                THEN GREATEST(e.scheduled_at, now()) ELSE e.scheduled_at END,
            updated_at = now()
        WHERE e.id = ANY(children) AND e.state || '' = 'WAITING' AND e.pending_parents IS NOT NULL
        RETURNING e.workflow_id, e.state, e.scheduled_at
    ), moved AS (
        SELECT u.workflow_id, count(*) AS n FROM u WHERE u.state = 'ENQUEUED' GROUP BY u.workflow_id
    ), counted AS (
        -- The children's workflows are their parents' (edges stay inside a workflow): locked above.
        UPDATE job_workflows w
        SET counts = w.counts || jsonb_build_object(
                         'WAITING', COALESCE(CAST(w.counts->>'WAITING' AS int), 0) - m.n,
                         'ENQUEUED', COALESCE(CAST(w.counts->>'ENQUEUED' AS int), 0) + m.n),
            updated_at = now()
        FROM moved m
        WHERE w.id = m.workflow_id
    )
    SELECT count(*) INTO released FROM u WHERE u.state = 'ENQUEUED' AND u.scheduled_at <= now();
    PERFORM set_config('jobwire.releasing', '', true);
    IF released > 0 THEN
        PERFORM pg_notify((SELECT m.value FROM job_meta m WHERE m.key = 'notify_channel'), '');
    END IF;
    RETURN NULL;
END
$function$;
