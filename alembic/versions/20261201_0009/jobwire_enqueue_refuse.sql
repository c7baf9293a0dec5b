-- jobwire_enqueue's refusal: SQLSTATE 22023 (invalid_parameter_value) with CONSTRAINT
-- jobwire_enqueue, the first fault in MESSAGE and every field at fault, as a JSON array of
-- {field, message}, in DETAIL (app/db/executions.py turns it into the API's 422).
CREATE OR REPLACE FUNCTION jobwire_enqueue_refuse(errors jsonb) RETURNS void
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
DECLARE
    total int := jsonb_array_length(errors);
BEGIN
    RAISE EXCEPTION '%', format('jobwire_enqueue: %s: %s%s', errors->0->>'field', errors->0->>'message',
                                CASE WHEN total > 1 THEN format(' (and %s more)', total - 1) ELSE '' END)
        USING ERRCODE = 'invalid_parameter_value', CONSTRAINT = 'jobwire_enqueue', DETAIL = CAST(errors AS text),
              HINT = 'DETAIL lists every field at fault as a JSON array of {field, message}';
END
$function$;
