-- Up Migration

-- CI failures on a conversation's own pull request feed its session (README "Talking to
-- Tether"). A loop is the run of automatic turns on one key without a green CI run between
-- them: it opens with the first failure it takes and ends green (the checks passed), stopped
-- (ci.maxAttempts turns in a row did not make them pass: one comment said so) or limit (a spend
-- limit kept the turn from running). At most one open loop per key.
CREATE TABLE ci_loops (
  id            bigserial PRIMARY KEY,
  repo          text NOT NULL,                 -- owner/name, lower case
  issue_number  integer NOT NULL,              -- the key's issue
  agent         text NOT NULL,
  pull_number   integer NOT NULL,              -- the conversation's pull request
  state         text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'green', 'stopped', 'limit')),
  attempts      integer NOT NULL DEFAULT 0,    -- automatic turns queued in this loop
  started_at    timestamptz NOT NULL DEFAULT now(),
  ended_at      timestamptz,
  -- When a run went green: ends the open loop, or releases a stopped one (a later failure may
  -- start a loop again without anyone asking the agent).
  green_at      timestamptz
);
CREATE UNIQUE INDEX ci_loops_open ON ci_loops (repo, issue_number, agent) WHERE state = 'open';
CREATE INDEX ci_loops_started ON ci_loops (started_at);

-- One automatic turn per head commit: each failing head commit a key's loop took, and what came
-- of it (a turn queued, absorbed by a turn already queued or running, the stop, the limit).
CREATE TABLE ci_commits (
  repo          text NOT NULL,
  issue_number  integer NOT NULL,
  agent         text NOT NULL,
  head_sha      text NOT NULL,
  loop_id       bigint NOT NULL REFERENCES ci_loops (id) ON DELETE CASCADE,
  result        text NOT NULL CHECK (result IN ('queued', 'absorbed', 'stopped', 'limit')),
  task_id       bigint,
  -- The delivery that took it: only that delivery, retried, may finish queueing its turn.
  delivery_id   text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repo, issue_number, agent, head_sha)
);

-- Down Migration
DROP TABLE ci_commits;
DROP TABLE ci_loops;
