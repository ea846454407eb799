-- Up Migration
-- The model's context window as the CLI reported it, for the context_budget guard.
ALTER TABLE sessions ADD COLUMN context_window bigint;

-- Down Migration
ALTER TABLE sessions DROP COLUMN context_window;
