-- Up Migration

-- Standing conversations (#41): the schedules of `.github/tether.yml`, as Tether last read them
-- from each repository's default branch. Keyed by repository id (a rename keeps them) and the
-- schedule's conversation (its agent and `issue:`/`title:`), so editing a schedule's request or
-- cron keeps its issue and its last run. `repo` is the name, for display and the task's key.
CREATE TABLE schedules (
  id               bigserial PRIMARY KEY,
  repo_id          bigint NOT NULL,
  installation_id  bigint NOT NULL,
  repo             text NOT NULL,
  schedule_key     text NOT NULL,
  position         integer NOT NULL,
  cron             text NOT NULL,
  timezone         text NOT NULL DEFAULT 'UTC',
  agent            text NOT NULL,
  -- `issue:` as configured, or the issue the first run opened for `title:`.
  issue_number     integer,
  title            text,
  request          text NOT NULL,
  -- The tick to run next. A claim advances it past now() in the statement that takes the tick,
  -- so a stretch missed while Tether was down runs once.
  next_run_at      timestamptz NOT NULL,
  last_run_at      timestamptz,
  last_task_id     bigint,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (repo_id, schedule_key),
  CHECK (issue_number IS NOT NULL OR title IS NOT NULL)
);
CREATE INDEX schedules_due ON schedules (next_run_at);

-- Repositories whose schedules are to be read again: marked by a push to the default branch and
-- by the app's installation (no GitHub call in the webhook), and read at least hourly.
CREATE TABLE schedule_repos (
  repo_id          bigint PRIMARY KEY,
  installation_id  bigint NOT NULL,
  repo             text NOT NULL,
  wanted_at        timestamptz NOT NULL DEFAULT now(),
  synced_at        timestamptz
);

ALTER TABLE tasks DROP CONSTRAINT tasks_trigger_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_trigger_check
  CHECK (trigger IN ('comment', 'review', 'label', 'assignment', 'ci', 'schedule'));

-- Down Migration
ALTER TABLE tasks DROP CONSTRAINT tasks_trigger_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_trigger_check
  CHECK (trigger IN ('comment', 'review', 'label', 'assignment', 'ci'));
DROP TABLE schedule_repos;
DROP TABLE schedules;
