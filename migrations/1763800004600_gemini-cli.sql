-- Up Migration

-- A third agent CLI, Google's Gemini CLI (src/gemini/): its sessions and turns are recorded
-- under cli = 'gemini' like Claude's and Codex's.
ALTER TABLE sessions DROP CONSTRAINT sessions_cli_check,
  ADD CONSTRAINT sessions_cli_check CHECK (cli IN ('claude', 'codex', 'gemini'));
ALTER TABLE tasks DROP CONSTRAINT tasks_cli_check,
  ADD CONSTRAINT tasks_cli_check CHECK (cli IN ('claude', 'codex', 'gemini'));

-- Down Migration
ALTER TABLE sessions DROP CONSTRAINT sessions_cli_check,
  ADD CONSTRAINT sessions_cli_check CHECK (cli IN ('claude', 'codex'));
ALTER TABLE tasks DROP CONSTRAINT tasks_cli_check,
  ADD CONSTRAINT tasks_cli_check CHECK (cli IN ('claude', 'codex'));
