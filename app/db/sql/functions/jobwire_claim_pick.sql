-- A flow-controlled handler's share of a claim (jobwire_claim, which holds the handler's advisory
-- lock, so no other claimer picks its jobs meanwhile): up to `slots` of its due jobs, at most
-- `keyless_slots` of them without a key (an adaptive handler's effective limit), in the order
-- priority DESC, turn (fair_tag: keys take turns, jobs without a key as one key of their own),
-- scheduled_at; none of a paused key, of a key a Retry-After holds, or of a key whose rate limit
-- allows no call now; per key no more than its limit (key_concurrency and, on an adaptive
-- handler, the key's effective limit) less its calls in flight, and its rate limit's allowance.
-- The picks are locked FOR UPDATE SKIP LOCKED until the caller commits.
--
-- The keys held back are found first, each once: those at their limit from the handler's calls
-- in flight (through the index on PROCESSING rows: as many rows as calls), those paused or out of
-- rate from job_keys; the walk in claim order passes over their jobs, so a key's backlog never
-- hides the keys behind it, and a job costs no probe of its own.
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
    v_keys text[];  -- keys with calls in flight, and how many more each may start (by its limit)
    v_room int[];
    v_held text[];  -- keys none of whose jobs may start now
BEGIN
    SELECT h.key_concurrency, h.key_rate_limit, h.adaptive, LEAST(h.max_concurrency, 4)
      INTO v_key_limit, v_key_rate, v_adaptive, v_start
    FROM job_handlers h WHERE h.name = handler_name;

    SELECT COALESCE(array_agg(f.key), '{}'), COALESCE(array_agg(f.room), '{}') INTO v_keys, v_room
    FROM (SELECT p.concurrency_key AS key,
                 LEAST(v_key_limit, CASE WHEN v_adaptive THEN COALESCE(k.adaptive_limit, v_start) END)
                     - count(*) AS room
          FROM job_executions p
          LEFT JOIN job_keys k ON k.handler = handler_name AND k.key = p.concurrency_key
          WHERE p.state = 'PROCESSING' AND p.handler = handler_name AND p.concurrency_key IS NOT NULL
            AND (v_key_limit IS NOT NULL OR v_adaptive)
          GROUP BY p.concurrency_key, k.adaptive_limit) AS f;

    v_held := ARRAY(
        SELECT v_keys[i] FROM generate_subscripts(v_keys, 1) AS i WHERE v_room[i] <= 0
        UNION ALL
        SELECT k.key FROM job_keys k
        WHERE k.handler = handler_name
          AND (k.paused OR k.retry_after > now() OR (v_key_rate IS NOT NULL AND k.rate_next > now())));

    RETURN ARRAY(
        WITH candidates AS (
            SELECT e.id, e.concurrency_key, e.priority, e.fair_tag, e.scheduled_at
            FROM job_executions e
            WHERE e.state = 'ENQUEUED' AND e.handler = handler_name AND e.scheduled_at <= now()
              AND NOT e.stateful
              AND (queues IS NULL OR e.queue = ANY(queues)) AND e.queue <> ALL(paused)
              AND (e.concurrency_key IS NULL OR NOT e.concurrency_key = ANY(v_held))
            ORDER BY e.priority DESC, e.fair_tag NULLS FIRST, e.scheduled_at
            LIMIT CASE WHEN v_key_limit IS NULL AND v_key_rate IS NULL AND NOT v_adaptive THEN slots
                       ELSE slots * 2 END
        ), allowed AS MATERIALIZED (
            -- Per key among the candidates: how many more may start now.
            SELECT c.key,
                   LEAST(COALESCE(f.room,
                                  LEAST(v_key_limit, CASE WHEN v_adaptive THEN COALESCE(k.adaptive_limit, v_start) END),
                                  2147483647),
                         CASE WHEN v_key_rate IS NOT NULL THEN jobwire_rate_allowance(v_key_rate, k.rate_next) END) AS n
            FROM (SELECT DISTINCT candidates.concurrency_key AS key FROM candidates
                  WHERE candidates.concurrency_key IS NOT NULL) AS c
            LEFT JOIN unnest(v_keys, v_room) AS f(key, room) ON f.key = c.key
            LEFT JOIN job_keys k ON k.handler = handler_name AND k.key = c.key
        ), picked AS (
            SELECT r.id, r.priority, r.fair_tag, r.scheduled_at
            FROM (SELECT c.*, row_number() OVER (PARTITION BY c.concurrency_key
                                                 ORDER BY c.priority DESC, c.fair_tag NULLS FIRST, c.scheduled_at)
                                  AS rank
                  FROM candidates c) AS r
            LEFT JOIN allowed a ON a.key = r.concurrency_key
            WHERE CASE WHEN r.concurrency_key IS NULL THEN r.rank <= keyless_slots ELSE r.rank <= a.n END
            ORDER BY r.priority DESC, r.fair_tag NULLS FIRST, r.scheduled_at
            LIMIT slots
        ), locked AS (
            -- Only the picks are locked (the candidates passed over are not): one held by another
            -- transaction (a cancel) is skipped, one changed meanwhile is re-checked as ENQUEUED.
            SELECT e.id FROM job_executions e
            WHERE e.id IN (SELECT picked.id FROM picked) AND e.state = 'ENQUEUED'
            FOR UPDATE SKIP LOCKED
        )
        SELECT p.id FROM picked p JOIN locked l ON l.id = p.id
        ORDER BY p.priority DESC, p.fair_tag NULLS FIRST, p.scheduled_at);
END
$function$;
