"""Every state a job's row takes, recorded by test-only triggers on job_executions.

The insert of a job, the claim and a workflow's release of a child write no job_events row
(revision 20261203_0021, DESIGN §8), so a test that proved "released exactly once" or "claimed
once" by counting those rows reads the row's own moves instead: STATE_MOVES records the state of
every insert, and of every UPDATE that changes the state, into test_state_moves, in the
transaction that wrote it (a second release of one child is a second move of its row, recorded
here). Installed on a test's own database; NO_STATE_MOVES removes it."""

from __future__ import annotations

STATE_MOVES = """
CREATE TABLE test_state_moves (id bigserial PRIMARY KEY, execution_id uuid NOT NULL, state text NOT NULL);
CREATE FUNCTION test_record_state_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO test_state_moves (execution_id, state) VALUES (NEW.id, NEW.state);
    RETURN NULL;
END $$;
CREATE TRIGGER test_record_insert AFTER INSERT ON job_executions
    FOR EACH ROW EXECUTE FUNCTION test_record_state_move();
CREATE TRIGGER test_record_state_move AFTER UPDATE ON job_executions
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION test_record_state_move();
"""

NO_STATE_MOVES = """
DROP TRIGGER IF EXISTS test_record_insert ON job_executions;
DROP TRIGGER IF EXISTS test_record_state_move ON job_executions;
DROP FUNCTION IF EXISTS test_record_state_move();
DROP TABLE IF EXISTS test_state_moves;
"""

# Each execution's states, oldest first: (execution_id, states).
MOVES = "SELECT execution_id, array_agg(state ORDER BY id) AS states FROM test_state_moves GROUP BY execution_id"
