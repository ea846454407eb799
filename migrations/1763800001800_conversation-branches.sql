-- Up Migration

-- Where a key's published changes go (README "Changes"): one branch per (repository, issue,
-- agent), and the pull request Tether opened for it. A comment on that pull request continues
-- the key's session (intake finds the key by repo and pull_number).
CREATE TABLE conversation_branches (
  repo          text NOT NULL,                 -- owner/name, lower case
  issue_number  integer NOT NULL,
  agent         text NOT NULL,
  branch        text NOT NULL,                 -- tether/<issue>-<agent>
  base_branch   text NOT NULL,                 -- what its pull request merges into
  head_sha      text,                          -- the last commit Tether pushed to it
  pull_number   integer,                       -- the pull request Tether opened for it
  pull_url      text,
  commits       integer NOT NULL DEFAULT 0,    -- commits Tether pushed to it, in all
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repo, issue_number, agent)
);
CREATE UNIQUE INDEX conversation_branches_pull ON conversation_branches (repo, pull_number)
  WHERE pull_number IS NOT NULL;

ALTER TABLE tasks
  -- Where the task's comments go when that is not the key's own thread: a comment on a key's
  -- pull request is a turn of the issue's key, answered on the pull request. NULL: issue_number.
  ADD COLUMN thread_number   integer,
  -- What became of the agent's changes after the turn (src/publish/publisher.ts).
  ADD COLUMN publish_result  text CHECK (publish_result IN
                               ('published', 'unchanged', 'refused', 'failed', 'patch', 'off')),
  -- Why it was refused or failed, as a code the dashboard counts (workflow, secret, size, …).
  ADD COLUMN publish_reason  text,
  ADD COLUMN publish_detail  text,
  ADD COLUMN published_sha   text,
  ADD COLUMN commits_pushed  integer,
  -- The pull request this task opened, if it opened one.
  ADD COLUMN pull_opened     integer;

CREATE INDEX tasks_publish ON tasks (finished_at) WHERE publish_result IS NOT NULL;
-- The webhook's "is any task on this thread?" check, for a conversation's pull request.
CREATE INDEX tasks_thread ON tasks (repo, thread_number) WHERE thread_number IS NOT NULL;

-- Down Migration
DROP INDEX tasks_thread;
DROP INDEX tasks_publish;
ALTER TABLE tasks
  DROP COLUMN pull_opened,
  DROP COLUMN commits_pushed,
  DROP COLUMN published_sha,
  DROP COLUMN publish_detail,
  DROP COLUMN publish_reason,
  DROP COLUMN publish_result,
  DROP COLUMN thread_number;
DROP TABLE conversation_branches;
