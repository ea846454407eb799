-- Up Migration

-- The agent CLIs are a registry in the code (src/cli-registry.ts): adding one is its folder and
-- one line there. A CHECK cannot read that list, so the CHECKs naming two CLIs go and the code
-- validates the name instead (the config schema on the way in; a row naming a CLI this runner
-- does not have fails its turn with words saying so). The runtime's binary is the default CLI's,
-- whichever that is: its column says so.
ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_cli_check;
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_cli_check;
ALTER TABLE runtimes RENAME COLUMN claude_path TO cli_path;

-- Down Migration
ALTER TABLE runtimes RENAME COLUMN cli_path TO claude_path;
ALTER TABLE tasks ADD CONSTRAINT tasks_cli_check CHECK (cli IN ('claude', 'codex')) NOT VALID;
ALTER TABLE sessions ADD CONSTRAINT sessions_cli_check CHECK (cli IN ('claude', 'codex')) NOT VALID;
