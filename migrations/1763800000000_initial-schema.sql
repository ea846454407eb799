-- Up Migration

-- A runtime is where sessions live: one machine, its $HOME/.claude store and one Claude binary.
-- A session can only be resumed on the runtime that made it (design.md, guard runtime_mismatch).
CREATE TABLE runtimes (
  id            text PRIMARY KEY,
  hostname      text NOT NULL,
  home_dir      text NOT NULL,
  claude_path   text NOT NULL,
  cli_version   text,
  can_resume    boolean,
  concurrency   integer NOT NULL DEFAULT 1,
  running       integer NOT NULL DEFAULT 0,
  started_at    timestamptz NOT NULL DEFAULT now(),
  heartbeat_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per turn. The task key is (repo, issue_number, agent).
CREATE TABLE tasks (
  id                     bigserial PRIMARY KEY,
  repo                   text NOT NULL,            -- owner/name, lower case
  repo_id                bigint,
  installation_id        bigint NOT NULL,
  issue_number           integer NOT NULL,
  is_pull_request        boolean NOT NULL DEFAULT false,
  agent                  text NOT NULL,
  status                 text NOT NULL DEFAULT 'queued'
                         CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  -- the comment that created the task (later coalesced comments are in task_comments too)
  trigger_comment_id     bigint,                   -- null when the issue body itself asked
  trigger_author         text NOT NULL,
  trigger_url            text NOT NULL,
  trigger_body           text NOT NULL,
  delivery_id            text,
  force_fresh            boolean NOT NULL DEFAULT false,
  cancel_requested       boolean NOT NULL DEFAULT false,
  -- where and how it ran
  runtime_id             text REFERENCES runtimes (id),
  work_dir               text,
  session_id             text,                     -- pinned from the CLI's init line, mid-run
  resume_session_id      text,                     -- the session the decision chose to resume
  resume_decision        text CHECK (resume_decision IN ('resume', 'fresh')),
  resume_reason          text,
  is_follow_up           boolean,                  -- the key already had a session before this turn
  history_epoch          integer,                  -- the key's history epoch when the turn started
  outcome                text CHECK (outcome IN ('success', 'failed', 'poisoned', 'resume_rejected',
                                                 'auth_failed', 'timed_out', 'stalled', 'cancelled')),
  failure_reason         text,
  tool_ran               boolean NOT NULL DEFAULT false,
  retried_fresh          boolean NOT NULL DEFAULT false,
  -- usage
  model                  text,
  input_tokens           bigint,
  output_tokens          bigint,
  cache_read_tokens      bigint,
  cache_creation_tokens  bigint,
  context_tokens         bigint,                   -- how full the session's context was after this turn
  cost_usd               numeric(14, 6),
  num_turns              integer,
  duration_ms            integer,
  -- GitHub side
  tracking_comment_id    bigint,
  answer_comment_id      bigint,                   -- set once: exactly one final answer per task
  -- lease
  locked_by              text,
  locked_at              timestamptz,
  heartbeat_at           timestamptz,
  attempts               integer NOT NULL DEFAULT 0,
  max_attempts           integer NOT NULL DEFAULT 3,
  -- time
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  started_at             timestamptz,
  finished_at            timestamptz,
  CHECK (status <> 'running' OR locked_by IS NOT NULL)
);

-- At most one queued and at most one running task per key: later comments coalesce into the
-- queued one, and a key never runs twice at once (two runs would fork one session).
CREATE UNIQUE INDEX tasks_one_queued_per_key ON tasks (repo, issue_number, agent) WHERE status = 'queued';
CREATE UNIQUE INDEX tasks_one_running_per_key ON tasks (repo, issue_number, agent) WHERE status = 'running';
CREATE INDEX tasks_queue ON tasks (created_at, id) WHERE status = 'queued';
CREATE INDEX tasks_running_lease ON tasks (heartbeat_at) WHERE status = 'running';
CREATE INDEX tasks_key_history ON tasks (repo, issue_number, agent, id DESC);
CREATE INDEX tasks_session ON tasks (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX tasks_created_at ON tasks (created_at);

-- Every comment (or issue body) that fed a task. The primary key makes intake idempotent: a
-- redelivered webhook for the same comment and agent creates nothing new.
CREATE TABLE task_comments (
  source      text NOT NULL,                      -- 'comment:<id>' or 'issue:<id>'
  agent       text NOT NULL,
  task_id     bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  comment_id  bigint,
  author      text NOT NULL,
  url         text NOT NULL,
  body        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, agent)
);
CREATE INDEX task_comments_task ON task_comments (task_id);
CREATE INDEX task_comments_comment ON task_comments (comment_id) WHERE comment_id IS NOT NULL;

-- Webhook deliveries already taken in (GitHub redelivers; X-GitHub-Delivery is the id).
CREATE TABLE webhook_deliveries (
  delivery_id  text PRIMARY KEY,
  event        text NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per Claude session. state is the session's latest state: a session once poisoned or
-- retired is never resumed again, whatever older turns in it said.
CREATE TABLE sessions (
  session_id       text PRIMARY KEY,
  repo             text NOT NULL,
  issue_number     integer NOT NULL,
  agent            text NOT NULL,
  runtime_id       text,
  work_dir         text,
  model            text,
  history_epoch    integer NOT NULL DEFAULT 0,
  context_tokens   bigint,
  state            text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'poisoned', 'retired')),
  state_reason     text,
  state_changed_at timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  last_used_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_key ON sessions (repo, issue_number, agent);

-- Bumped when a comment in a key's session history, or the issue body, is edited or deleted.
-- A session pinned at an older epoch is not resumed (guard history_edited).
CREATE TABLE history_epochs (
  repo          text NOT NULL,
  issue_number  integer NOT NULL,
  agent         text NOT NULL,
  epoch         integer NOT NULL DEFAULT 0,
  reason        text,
  bumped_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repo, issue_number, agent)
);

-- Down Migration
DROP TABLE history_epochs;
DROP TABLE sessions;
DROP TABLE webhook_deliveries;
DROP TABLE task_comments;
DROP TABLE tasks;
DROP TABLE runtimes;
