-- Up Migration

-- A third agent CLI, sst's opencode: its sessions and turns name it like Claude's and Codex's.
ALTER TABLE sessions DROP CONSTRAINT sessions_cli_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_cli_check CHECK (cli IN ('claude', 'codex', 'opencode'));
ALTER TABLE tasks DROP CONSTRAINT tasks_cli_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_cli_check CHECK (cli IN ('claude', 'codex', 'opencode'));

-- Down Migration
DELETE FROM sessions WHERE cli = 'opencode';
UPDATE tasks SET cli = NULL WHERE cli = 'opencode';
ALTER TABLE sessions DROP CONSTRAINT sessions_cli_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_cli_check CHECK (cli IN ('claude', 'codex'));
ALTER TABLE tasks DROP CONSTRAINT tasks_cli_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_cli_check CHECK (cli IN ('claude', 'codex'));
