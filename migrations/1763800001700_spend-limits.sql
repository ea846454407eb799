-- Up Migration

-- Spend limits (src/runner/spend-limits.ts). Two new outcomes:
--   turn_limit     the CLI stopped the run at the agent's per-turn limit (--max-budget-usd);
--   limit_refused  the task was not run: its conversation, repository or installation had
--                  reached a spend limit (status 'cancelled', no resume decision: not a turn).
ALTER TABLE tasks DROP CONSTRAINT tasks_outcome_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_outcome_check CHECK (outcome IN (
  'success', 'failed', 'poisoned', 'resume_rejected', 'auth_failed', 'timed_out', 'stalled',
  'cancelled', 'turn_limit', 'limit_refused'));

-- What a turn added to its conversation, in bytes: the prompt Tether wrote to the CLI, and the
-- answer it got back. /status estimates what resuming saved from these (a fresh start would
-- have sent the earlier prompts and answers again), by the savings benchmark's accounting.
ALTER TABLE tasks
  ADD COLUMN prompt_bytes integer,
  ADD COLUMN answer_bytes integer;

-- The monthly limits sum a repository's (or an installation's) recorded costs since the start
-- of the month before each turn: index-only scans over that month's turns.
CREATE INDEX tasks_repo_spend ON tasks (repo, created_at) INCLUDE (cost_usd)
  WHERE cost_usd IS NOT NULL;
CREATE INDEX tasks_installation_spend ON tasks (installation_id, created_at) INCLUDE (cost_usd)
  WHERE cost_usd IS NOT NULL;
-- The dashboard counts refused tasks in its window (they are not turns, so not in the roll-ups).
CREATE INDEX tasks_limit_refused ON tasks (created_at) WHERE outcome = 'limit_refused';

-- Down Migration
DROP INDEX tasks_limit_refused;
DROP INDEX tasks_installation_spend;
DROP INDEX tasks_repo_spend;
ALTER TABLE tasks DROP COLUMN answer_bytes, DROP COLUMN prompt_bytes;
UPDATE tasks SET outcome = 'failed' WHERE outcome = 'turn_limit';
UPDATE tasks SET outcome = 'cancelled' WHERE outcome = 'limit_refused';
ALTER TABLE tasks DROP CONSTRAINT tasks_outcome_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_outcome_check CHECK (outcome IN (
  'success', 'failed', 'poisoned', 'resume_rejected', 'auth_failed', 'timed_out', 'stalled',
  'cancelled'));
