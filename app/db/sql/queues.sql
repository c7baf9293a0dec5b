-- Named statements for job_queues (no row = active), parsed once by app/db/queries.py.

-- name: queue_set_paused
INSERT INTO job_queues (name, paused, updated_at) VALUES (:name, :paused, now())
ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now()

-- name: queues_overview
-- Every queue that has executions or a job_queues row (or just :name when given): paused flag,
-- counts by state, and the age of its oldest claimable (due, ENQUEUED) job in database time.
-- The counts read every row of the queue: an operator's view, not a hot path.
WITH names AS (
    SELECT DISTINCT queue AS name FROM job_executions
    WHERE CAST(:name AS text) IS NULL OR queue = :name
    UNION
    SELECT name FROM job_queues WHERE CAST(:name AS text) IS NULL OR name = :name
    UNION
    SELECT :name WHERE CAST(:name AS text) IS NOT NULL
), counts AS (
    SELECT queue, jsonb_object_agg(state, n) AS counts
    FROM (SELECT queue, state, count(*) AS n FROM job_executions
          WHERE CAST(:name AS text) IS NULL OR queue = :name
          GROUP BY queue, state) AS per_state
    GROUP BY queue
), oldest AS (
    SELECT queue, EXTRACT(EPOCH FROM now() - min(scheduled_at)) AS age
    FROM job_executions
    WHERE state = 'ENQUEUED' AND scheduled_at <= now()
      AND (CAST(:name AS text) IS NULL OR queue = :name)
    GROUP BY queue
)
SELECT n.name, COALESCE(q.paused, false) AS paused, COALESCE(c.counts, CAST('{}' AS jsonb)) AS counts,
       o.age AS oldest_claimable_age_seconds
FROM names n
LEFT JOIN job_queues q ON q.name = n.name
LEFT JOIN counts c ON c.queue = n.name
LEFT JOIN oldest o ON o.queue = n.name
ORDER BY n.name

-- name: queues_depth
-- Per queue: ENQUEUED rows due now and scheduled later, PROCESSING rows, DEAD_LETTER rows and
-- the age of the oldest due one (database time), with the paused flag. Each part reads rows of
-- one state through an index on it (the backlog, the work in flight, the dead letters), never
-- the finished history: cheap enough to scrape.
WITH depth AS (
    SELECT queue, count(*) FILTER (WHERE scheduled_at <= now()) AS due,
           count(*) FILTER (WHERE scheduled_at > now()) AS scheduled, 0 AS processing, 0 AS dead_letter,
           EXTRACT(EPOCH FROM now() - min(scheduled_at) FILTER (WHERE scheduled_at <= now())) AS oldest_due_age
    FROM job_executions WHERE state = 'ENQUEUED' GROUP BY queue
    UNION ALL
    SELECT queue, 0, 0, count(*), 0, NULL FROM job_executions WHERE state = 'PROCESSING' GROUP BY queue
    UNION ALL
    SELECT queue, 0, 0, 0, count(*), NULL FROM job_executions WHERE state = 'DEAD_LETTER' GROUP BY queue
    UNION ALL
    SELECT name, 0, 0, 0, 0, NULL FROM job_queues
)
SELECT d.queue, COALESCE(bool_or(q.paused), false) AS paused, sum(d.due) AS due, sum(d.scheduled) AS scheduled,
       sum(d.processing) AS processing, sum(d.dead_letter) AS dead_letter, max(d.oldest_due_age) AS oldest_due_age
FROM depth d LEFT JOIN job_queues q ON q.name = d.queue
GROUP BY d.queue
ORDER BY d.queue
