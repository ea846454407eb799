-- Up Migration
-- Codex sessions in the shared store (issue 18): a Codex thread's rollout is found by the
-- thread id in its file name, `rollout-<local time>-<thread id>.jsonl`, and only under a name
-- of that shape, so the store keeps the name the CLI gave it. NULL for Claude transcripts,
-- whose file is always `<session id>.jsonl`.
ALTER TABLE session_transcripts ADD COLUMN file_name text;

-- Down Migration
ALTER TABLE session_transcripts DROP COLUMN file_name;
