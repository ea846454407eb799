-- Up Migration

-- Session controls from the thread (#30).
-- The model a comment asked for with `/model <name>`, for this task's turn only; NULL: the
-- agent's configured model.
ALTER TABLE tasks ADD COLUMN requested_model text;
-- `/from <agent>`: the session of another agent on the same issue this task's turn starts as a
-- fork of (`--resume <id> --fork-session`; that session stays as it was); NULL: none.
ALTER TABLE tasks ADD COLUMN fork_session_id text;
-- `/resume <id-prefix>`: when a person chose this session as the one the key's next turn
-- resumes. It outweighs the key's latest finished task until a turn runs in a session after it.
ALTER TABLE sessions ADD COLUMN pinned_at timestamptz;

-- Down Migration
ALTER TABLE sessions DROP COLUMN pinned_at;
ALTER TABLE tasks DROP COLUMN fork_session_id;
ALTER TABLE tasks DROP COLUMN requested_model;
