-- How many calls a rate limit lets start now: {"limit": n, "period_seconds": p} and the limiter's
-- next slot (`next`, NULL: never used). The limiter is GCRA (the generic cell rate algorithm):
-- calls are spaced T = p / (n - b + 1) apart with bursts of at most b = max(1, n / 20), so that
-- no window of p seconds ever holds more than n call starts, and a steady backlog starts
-- n / p calls a second less b - 1 per period (5 a second: one every 200 ms; 1,000 a minute: a
-- burst of 50, then one every 63 ms). `next` is the earliest start of the next call
-- (jobwire_rate_next). A plain SQL function of one expression (no FROM): inlined into the claim.
CREATE OR REPLACE FUNCTION jobwire_rate_allowance(lim jsonb, next timestamptz)
RETURNS int
LANGUAGE sql STABLE
AS $function$
-- b = GREATEST(1, limit / 20); T = period / (limit - b + 1); tau = T * (b - 1).
SELECT CASE
    WHEN lim IS NULL THEN 2147483647
    WHEN next IS NULL THEN GREATEST(1, CAST(lim->>'limit' AS int) / 20)
    WHEN next > now() THEN 0
    ELSE CAST(LEAST(
        GREATEST(1, CAST(lim->>'limit' AS int) / 20),
        1 + floor(LEAST(EXTRACT(EPOCH FROM now() - next),
                        CAST(lim->>'period_seconds' AS float8)
                            / (CAST(lim->>'limit' AS int) - GREATEST(1, CAST(lim->>'limit' AS int) / 20) + 1)
                            * (GREATEST(1, CAST(lim->>'limit' AS int) / 20) - 1))
                  / (CAST(lim->>'period_seconds' AS float8)
                     / (CAST(lim->>'limit' AS int) - GREATEST(1, CAST(lim->>'limit' AS int) / 20) + 1)))) AS int)
END
$function$;
