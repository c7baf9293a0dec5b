-- jobwire_parse_time as revision 20261130_0008 left it (its downgrade restores it), but for the NOTIFY channel,
-- read from job_meta. Generated from pg_get_functiondef; kept as it was.
CREATE OR REPLACE FUNCTION jobwire_parse_time(value text)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 STABLE STRICT
 SET search_path FROM CURRENT
AS $function$
DECLARE
    parsed timestamptz;
BEGIN
    -- RFC 3339 with a zone (Z or ±hh:mm); the result must fit years 1-9999 in UTC.
    IF value IS NULL OR value !~ '^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$' THEN
        RETURN NULL;
    END IF;
    parsed := CAST(value AS timestamptz);
    IF parsed < TIMESTAMPTZ '0001-01-01 00:00:00+00' OR parsed > TIMESTAMPTZ '9999-12-31 23:59:59.999999+00' THEN
        RETURN NULL;
    END IF;
    RETURN parsed;
EXCEPTION WHEN data_exception THEN  -- e.g. 2030-02-30: the pattern cannot see the calendar
    RETURN NULL;
END
$function$;
