-- Up Migration

-- The answer outbox: a task's final answer that the thread has not heard yet. A run whose last
-- comment write failed past the request policy's retries (GitHub down for longer than ~15 s),
-- and a task the sweeper failed because its runner kept dying, finish with their real status
-- and the answer pending here; the runner's deliverer posts it later into the task's own
-- comment, with backoff, exactly once (src/sql/answer-outbox.ts, src/runner/deliver-answers.ts).
ALTER TABLE tasks
  ADD COLUMN answer_pending   boolean NOT NULL DEFAULT false,
  -- the rendered, already scrubbed body; NULL: render the failure from outcome/failure_reason
  ADD COLUMN answer_body      text,
  -- deliveries the deliverer started (a claim counts one, so a crashed deliverer counts too)
  ADD COLUMN answer_attempts  integer NOT NULL DEFAULT 0,
  -- when the next delivery may start; while one runs, the end of its lease
  ADD COLUMN answer_next_at   timestamptz,
  -- why the last delivery failed, or why it was given up (operators read this)
  ADD COLUMN answer_error     text,
  -- only a finished task waits for its answer: a running one still posts its own
  ADD CONSTRAINT tasks_answer_pending_finished CHECK (
    NOT answer_pending
    OR (answer_next_at IS NOT NULL AND status IN ('succeeded', 'failed', 'cancelled')));

CREATE INDEX tasks_answer_due ON tasks (answer_next_at, id) WHERE answer_pending;

-- Down Migration
DROP INDEX tasks_answer_due;
ALTER TABLE tasks
  DROP CONSTRAINT tasks_answer_pending_finished,
  DROP COLUMN answer_error,
  DROP COLUMN answer_next_at,
  DROP COLUMN answer_attempts,
  DROP COLUMN answer_body,
  DROP COLUMN answer_pending;
