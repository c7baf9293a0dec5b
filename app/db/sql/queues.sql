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
