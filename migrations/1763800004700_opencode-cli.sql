-- Up Migration

-- A third agent CLI, sst's opencode: its sessions and turns name it like Claude's and Codex's.
-- Where the CHECKs naming the CLIs are still there, they learn `opencode`; where they are gone
-- (the code validates the name instead), nothing changes.
DO $do$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'sessions_cli_check') THEN
    ALTER TABLE sessions DROP CONSTRAINT sessions_cli_check;
    ALTER TABLE sessions ADD CONSTRAINT sessions_cli_check
      CHECK (cli IN ('claude', 'codex', 'opencode'));
  END IF;
  IF EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'tasks_cli_check') THEN
    ALTER TABLE tasks DROP CONSTRAINT tasks_cli_check;
    ALTER TABLE tasks ADD CONSTRAINT tasks_cli_check CHECK (cli IN ('claude', 'codex', 'opencode'));
  END IF;
END
$do$;

-- Down Migration
DO $do$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'sessions_cli_check') THEN
    DELETE FROM sessions WHERE cli = 'opencode';
    ALTER TABLE sessions DROP CONSTRAINT sessions_cli_check;
    ALTER TABLE sessions ADD CONSTRAINT sessions_cli_check CHECK (cli IN ('claude', 'codex'));
  END IF;
  IF EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'tasks_cli_check') THEN
    UPDATE tasks SET cli = NULL WHERE cli = 'opencode';
    ALTER TABLE tasks DROP CONSTRAINT tasks_cli_check;
    ALTER TABLE tasks ADD CONSTRAINT tasks_cli_check CHECK (cli IN ('claude', 'codex'));
  END IF;
END
$do$;
