-- What a dispatch of a job that suspended carries beside the usual body (DESIGN §9):
-- {"steps": {name: result}}, every step recorded (so a stateless handler replays to where it
-- was), and, when this attempt was resumed, {"resume": {n, reason, signals: [{name, payload,
-- sent_at}], children: {}}}. jobwire_claim calls it for the claimed jobs that ever suspended.
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
                               'children', CAST('{}' AS jsonb)))
                    FROM job_waits w
                    WHERE w.execution_id = execution AND w.attempt = jobwire_resume_context.attempt
                      AND w.resumed_at IS NOT NULL), CAST('{}' AS jsonb))
$function$;
