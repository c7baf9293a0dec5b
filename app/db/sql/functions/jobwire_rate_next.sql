-- A limiter's next slot once `calls` calls started now (see jobwire_rate_allowance): the
-- earliest start of the call after them. A plain SQL function: inlined into the claim.
CREATE OR REPLACE FUNCTION jobwire_rate_next(lim jsonb, next timestamptz, calls int)
RETURNS timestamptz
LANGUAGE sql STABLE
AS $function$
SELECT GREATEST(next, now() - make_interval(secs => r.tau))  -- GREATEST skips a NULL
       + make_interval(secs => r.t * calls)
FROM (SELECT CAST(lim->>'period_seconds' AS float8)
                 / (CAST(lim->>'limit' AS int) - GREATEST(1, CAST(lim->>'limit' AS int) / 20) + 1) AS t,
             CAST(lim->>'period_seconds' AS float8)
                 / (CAST(lim->>'limit' AS int) - GREATEST(1, CAST(lim->>'limit' AS int) / 20) + 1)
                 * (GREATEST(1, CAST(lim->>'limit' AS int) / 20) - 1) AS tau) AS r
$function$;
