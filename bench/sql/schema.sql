-- The queue table of PostgreSQL's own claim + complete limit (as ../shared/bench-anchors/pgbench).
DROP TABLE IF EXISTS q;
CREATE TABLE q (
    id         bigserial PRIMARY KEY,
    state      text        NOT NULL DEFAULT 'ready',
    priority   int         NOT NULL DEFAULT 0,
    payload    jsonb       NOT NULL DEFAULT '{}'::jsonb,
    attempts   int         NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- The partial index that serves the claim (ORDER BY priority DESC, id WHERE state = 'ready').
CREATE INDEX q_ready_idx ON q (priority DESC, id) WHERE state = 'ready';
