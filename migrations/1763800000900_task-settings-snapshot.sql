-- Up Migration
-- The agents' settings and resume policy intake validated when it queued the task (see
-- src/config/repo-settings.ts). NULL: the runner reads the config from GitHub, as before.
ALTER TABLE tasks ADD COLUMN repo_settings jsonb;

-- Down Migration
ALTER TABLE tasks DROP COLUMN repo_settings;
