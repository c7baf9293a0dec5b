-- A limiter's next slot once `calls` calls started now (see jobwire_rate_allowance): the
-- earliest start of the call after them. A plain SQL function of one expression: inlined.
CREATE OR REPLACE FUNCTION jobwire_rate_next(lim jsonb, next timestamptz, calls int)
RETURNS timestamptz
LANGUAGE sql STABLE
AS $function$
-- max(next, now - tau) + calls * T, with T and tau as jobwire_rate_allowance has them (GREATEST
-- skips a NULL next).
SELECT GREATEST(next, now() - make_interval(secs =>
           CAST(lim->>'period_seconds' AS float8)
               / (CAST(lim->>'limit' AS int) - GREATEST(1, CAST(lim->>'limit' AS int) / 20) + 1)
               * (GREATEST(1, CAST(lim->>'limit' AS int) / 20) - 1)))
       + make_interval(secs => calls * CAST(lim->>'period_seconds' AS float8)
                                / (CAST(lim->>'limit' AS int) - GREATEST(1, CAST(lim->>'limit' AS int) / 20) + 1))
$function$;
