-- A workflow's counts stay its jobs as they are when some are deleted (DELETE, bulk-delete,
-- retention: only finished jobs are ever deleted): the trigger jobwire_workflow_deletions, AFTER
-- DELETE ON job_executions FOR EACH STATEMENT, with the rows deleted (old_rows), takes them out of
-- their workflows' counts, jobs and users' cancels, one update per workflow in id order, and
-- deletes their edges (job_dependencies has no foreign keys: this is its ON DELETE CASCADE; only
-- jobs of workflows have edges). A statement that deletes no job of a workflow looks at its rows
-- once and returns.
CREATE OR REPLACE FUNCTION jobwire_workflow_deletions()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $function$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM old_rows o WHERE o.workflow_id IS NOT NULL) THEN
        RETURN NULL;
    END IF;
    WITH gone AS (
        SELECT o.workflow_id, o.state, count(*) AS n,
               count(*) FILTER (WHERE o.state = 'CANCELLED' AND o.error_type IS DISTINCT FROM 'dependency_failed')
                   AS by_user,
               count(*) FILTER (WHERE o.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED')) AS unfinished
        FROM old_rows o WHERE o.workflow_id IS NOT NULL
        GROUP BY o.workflow_id, o.state
    ), per AS (
        SELECT g.workflow_id, jsonb_object_agg(g.state, g.n) AS n, sum(g.n) AS jobs, sum(g.by_user) AS by_user,
               sum(g.unfinished) AS unfinished
        FROM gone g GROUP BY g.workflow_id
        ORDER BY g.workflow_id
    )
    UPDATE job_workflows w
    SET counts = (SELECT COALESCE(jsonb_object_agg(k.key, COALESCE(CAST(w.counts->>k.key AS int), 0)
                                                        - COALESCE(CAST(p.n->>k.key AS int), 0)), '{}')
                  FROM jsonb_object_keys(w.counts) AS k(key)),
        jobs = w.jobs - p.jobs, cancelled_by_user = w.cancelled_by_user - p.by_user,
        unfinished = w.unfinished - p.unfinished, updated_at = now()
    FROM per p
    WHERE w.id = p.workflow_id;
    DELETE FROM job_dependencies d
    WHERE d.parent_id IN (SELECT o.id FROM old_rows o WHERE o.workflow_id IS NOT NULL);
    DELETE FROM job_dependencies d
    WHERE d.child_id IN (SELECT o.id FROM old_rows o WHERE o.workflow_id IS NOT NULL);
    RETURN NULL;
END
$function$;
