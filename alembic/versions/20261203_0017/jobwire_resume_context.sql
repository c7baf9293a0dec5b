-- What a dispatch of a job that suspended carries beside the usual body (DESIGN §9):
-- {"steps": {name: result}}, every step recorded (so a stateless handler replays to where it
-- was), and, when this attempt was resumed, {"resume": {n, reason, signals: [{name, payload,
-- sent_at}], children}}: for a wait on its spawned children, each by the ref it gave,
-- {execution_id, state, result}, the results inlined while they total at most 256 KiB as JSON
-- text, else left out (GET {callback.url}/children pages through them); {} for other waits.
-- jobwire_claim calls it for the claimed jobs that ever suspended.
CREATE OR REPLACE FUNCTION jobwire_resume_context(execution uuid, attempt int)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path FROM CURRENT
SET TimeZone = 'UTC'
AS $function$
SELECT jsonb_build_object(
           'steps', COALESCE((SELECT jsonb_object_agg(s.name, s.result) FROM job_steps s
                              WHERE s.execution_id = execution), CAST('{}' AS jsonb)))
       || COALESCE((SELECT jsonb_build_object('resume', jsonb_build_object(
                               'n', w.n, 'reason', w.reason, 'signals', COALESCE(w.delivered, CAST('[]' AS jsonb)),
                               'children', CASE WHEN w.children THEN (
                                   SELECT COALESCE(jsonb_object_agg(
                                              c.ref, jsonb_build_object('execution_id', c.id, 'state', c.state)
                                                     || CASE WHEN c.total <= 262144
                                                             THEN jsonb_build_object('result', c.result)
                                                             ELSE CAST('{}' AS jsonb) END), CAST('{}' AS jsonb))
                                   FROM (SELECT substr(k.workflow_ref, length(p.workflow_ref) + 2) AS ref, k.id,
                                                k.state, k.result,
                                                sum(COALESCE(octet_length(CAST(k.result AS text)), 4)) OVER () AS total
                                         FROM job_executions p JOIN job_executions k ON k.spawned_by = p.id
                                         WHERE p.id = execution) AS c)
                                   ELSE CAST('{}' AS jsonb) END))
                    FROM job_waits w
                    WHERE w.execution_id = execution AND w.attempt = jobwire_resume_context.attempt
                      AND w.resumed_at IS NOT NULL), CAST('{}' AS jsonb))
$function$;
