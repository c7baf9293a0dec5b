-- Named statements for job_queues (no row = active), parsed once by app/db/queries.py.

-- name: queue_set_paused
INSERT INTO job_queues (name, paused, updated_at) VALUES (:name, :paused, now())
ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now()

-- name: queues_depth
-- Per queue (every queue, or :name alone): ENQUEUED rows due now and scheduled later, PROCESSING
-- rows, DEAD_LETTER rows and the age of the oldest due one (database time), with the paused flag.
-- Each part reads rows of one state through an index on it (the backlog, the work in flight, the
-- dead letters), never the finished history: cheap with millions of finished rows. A queue is
-- listed when it has such rows or a job_queues row (paused once); one with only finished rows
-- is not (finding it would read the history).
WITH depth AS (
    SELECT queue, count(*) FILTER (WHERE scheduled_at <= now()) AS due,
           count(*) FILTER (WHERE scheduled_at > now()) AS scheduled, 0 AS processing, 0 AS dead_letter,
           EXTRACT(EPOCH FROM now() - min(scheduled_at) FILTER (WHERE scheduled_at <= now())) AS oldest_due_age
    FROM job_executions WHERE state = 'ENQUEUED' AND (CAST(:name AS text) IS NULL OR queue = :name)
    GROUP BY queue
    UNION ALL
    SELECT queue, 0, 0, count(*), 0, NULL FROM job_executions
    WHERE state = 'PROCESSING' AND (CAST(:name AS text) IS NULL OR queue = :name) GROUP BY queue
    UNION ALL
    SELECT queue, 0, 0, 0, count(*), NULL FROM job_executions
    WHERE state = 'DEAD_LETTER' AND (CAST(:name AS text) IS NULL OR queue = :name) GROUP BY queue
    UNION ALL
    SELECT name, 0, 0, 0, 0, NULL FROM job_queues WHERE CAST(:name AS text) IS NULL OR name = :name
    UNION ALL
    SELECT :name, 0, 0, 0, 0, NULL WHERE CAST(:name AS text) IS NOT NULL  -- a queue asked for by name
)
SELECT d.queue, COALESCE(bool_or(q.paused), false) AS paused, sum(d.due) AS due, sum(d.scheduled) AS scheduled,
       sum(d.processing) AS processing, sum(d.dead_letter) AS dead_letter, max(d.oldest_due_age) AS oldest_due_age
FROM depth d LEFT JOIN job_queues q ON q.name = d.queue
GROUP BY d.queue
ORDER BY d.queue

-- name: queues_of_schedules
-- The queues schedules fire into (a handful of rows: one per schedule), listed by /metrics
-- beside those with live rows even before a fire lands there.
SELECT DISTINCT queue FROM job_schedules ORDER BY queue
