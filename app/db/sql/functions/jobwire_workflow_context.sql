-- The `workflow` of a dispatch (DESIGN §9): {id, ref, parents: {ref: {execution_id, state, result}}}
-- for a job in a workflow, its direct parents by ref; their results inlined while they total at
-- most 256 KiB as JSON text, else every `result` left out (GET {callback.url}/parents pages
-- through them). NULL for a job outside workflows. jobwire_claim calls it for the jobs it claims.
CREATE OR REPLACE FUNCTION jobwire_workflow_context(execution uuid)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $function$
BEGIN
    RETURN (
WITH job AS (
    SELECT e.id, e.workflow_id, e.workflow_ref FROM job_executions e
    WHERE e.id = execution AND e.workflow_id IS NOT NULL
), parents AS (
    SELECT p.workflow_ref AS ref, p.id, p.state, p.result,
           sum(COALESCE(octet_length(CAST(p.result AS text)), 4)) OVER () AS total
    FROM job d_job JOIN job_dependencies d ON d.child_id = d_job.id
    JOIN job_executions p ON p.id = d.parent_id
)
SELECT jsonb_build_object(
           'id', job.workflow_id, 'ref', job.workflow_ref,
           'parents', COALESCE((SELECT jsonb_object_agg(
                                           p.ref, jsonb_build_object('execution_id', p.id, 'state', p.state)
                                                  || CASE WHEN p.total <= 262144
                                                          THEN jsonb_build_object('result', p.result)
                                                          ELSE CAST('{}' AS jsonb) END)
                                FROM parents p), CAST('{}' AS jsonb)))
FROM job
    );
END
$function$;
