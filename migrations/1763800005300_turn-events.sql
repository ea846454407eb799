-- Up Migration

-- The live view of a running turn (#40): what the runner saw the CLI do, redacted and clipped,
-- one row per event, read by any web process (src/sql/turn-events.ts). Rows go with their task
-- (ON DELETE CASCADE) and with the inbox pruner's sweep once the task is long finished.
CREATE TABLE turn_events (
  id          bigserial PRIMARY KEY,
  task_id     bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  -- 'init', 'text', 'tool_use', 'tool_result', 'usage', 'result', 'dropped', …
  kind        text NOT NULL,
  body        jsonb NOT NULL,
  bytes       integer NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX turn_events_task ON turn_events (task_id, id);

-- The key the live view's links are signed with: one random row, shared by every runner (which
-- signs) and every web replica (which checks), so a link works whichever replica answers it.
CREATE TABLE live_link_key (
  id          smallint PRIMARY KEY CHECK (id = 1),
  key         bytea NOT NULL CHECK (length(key) >= 32),
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE live_link_key;
DROP TABLE turn_events;
