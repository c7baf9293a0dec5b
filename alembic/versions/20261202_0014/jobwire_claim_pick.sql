-- A flow-controlled handler's share of a claim (jobwire_claim, which holds the handler's advisory
-- lock, so no other claimer picks its jobs meanwhile): up to `slots` of its due jobs, at most
-- `keyless_slots` of them without a key (an adaptive handler's effective limit), in the order
-- priority DESC, turn (fair_tag: keys take turns, jobs without a key as one key of their own),
-- scheduled_at; none of a paused key, of a key a Retry-After holds, or of a key whose rate limit
-- allows no call now; per key no more than its limit (key_concurrency and, on an adaptive
-- handler, the key's effective limit) less its calls in flight, and its rate limit's allowance.
-- Locked FOR UPDATE SKIP LOCKED until the caller commits. A job of a key at its limit is passed
-- over by the walk (one index probe each), so a key's backlog never hides the keys behind it.
CREATE OR REPLACE FUNCTION jobwire_claim_pick(handler_name text, slots int, keyless_slots int, queues text[],
                                              paused text[])
RETURNS uuid[]
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $function$
DECLARE
    v_key_limit int;
    v_key_rate jsonb;
    v_adaptive boolean;
    v_start int;  -- an adaptive key's first effective limit
BEGIN
    SELECT h.key_concurrency, h.key_rate_limit, h.adaptive, LEAST(h.max_concurrency, 4)
      INTO v_key_limit, v_key_rate, v_adaptive, v_start
    FROM job_handlers h WHERE h.name = handler_name;
    RETURN ARRAY(
        WITH candidates AS (
            SELECT e.id, e.concurrency_key, e.priority, e.fair_tag, e.scheduled_at
            FROM job_executions e
            WHERE e.state = 'ENQUEUED' AND e.handler = handler_name AND e.scheduled_at <= now()
              AND NOT e.stateful
              AND (queues IS NULL OR e.queue = ANY(queues)) AND e.queue <> ALL(paused)
              AND (e.concurrency_key IS NULL OR (
                  NOT EXISTS (SELECT 1 FROM job_keys k
                              WHERE k.handler = handler_name AND k.key = e.concurrency_key
                                AND (k.paused OR k.retry_after > now()
                                     OR jobwire_rate_allowance(v_key_rate, k.rate_next) = 0))
                  AND ((v_key_limit IS NULL AND NOT v_adaptive)
                       OR (SELECT count(*) FROM job_executions p
                           WHERE p.handler = handler_name AND p.concurrency_key = e.concurrency_key
                             AND p.state = 'PROCESSING')
                          < LEAST(v_key_limit,
                                  CASE WHEN v_adaptive THEN
                                      COALESCE((SELECT k.adaptive_limit FROM job_keys k
                                                WHERE k.handler = handler_name AND k.key = e.concurrency_key),
                                               v_start) END))))
            ORDER BY e.priority DESC, e.fair_tag NULLS FIRST, e.scheduled_at
            LIMIT CASE WHEN v_key_limit IS NULL AND v_key_rate IS NULL AND NOT v_adaptive THEN slots
                       ELSE slots * 4 END
            FOR UPDATE SKIP LOCKED
        ), allowed AS (
            -- Per key among the candidates: how many more may start now.
            SELECT c.key,
                   LEAST(COALESCE(LEAST(v_key_limit,
                                        CASE WHEN v_adaptive THEN COALESCE(k.adaptive_limit, v_start) END)
                                  - (SELECT count(*) FROM job_executions p
                                     WHERE p.handler = handler_name AND p.concurrency_key = c.key
                                       AND p.state = 'PROCESSING'), 2147483647),
                         jobwire_rate_allowance(v_key_rate, k.rate_next)) AS n
            FROM (SELECT DISTINCT candidates.concurrency_key AS key FROM candidates
                  WHERE candidates.concurrency_key IS NOT NULL) AS c
            LEFT JOIN job_keys k ON k.handler = handler_name AND k.key = c.key
        )
        SELECT r.id
        FROM (SELECT c.*, row_number() OVER (PARTITION BY c.concurrency_key
                                             ORDER BY c.priority DESC, c.fair_tag NULLS FIRST, c.scheduled_at) AS rank
              FROM candidates c) AS r
        LEFT JOIN allowed a ON a.key = r.concurrency_key
        WHERE CASE WHEN r.concurrency_key IS NULL THEN r.rank <= keyless_slots ELSE r.rank <= a.n END
        ORDER BY r.priority DESC, r.fair_tag NULLS FIRST, r.scheduled_at
        LIMIT slots);
END
$function$;
