-- Up Migration

-- GitHub's rate-limit headroom per installation (#34, "near the limit, defer; do not fail"), as
-- the last responses of any Tether process reported it (x-ratelimit-remaining, -limit, -reset),
-- so every runner's claim sees it. Written by src/sql/rate-limits.ts: within one window (the
-- same reset) the lowest remaining wins, a later window replaces an earlier one.
CREATE TABLE installation_rate_limits (
  installation_id bigint PRIMARY KEY,
  remaining       integer NOT NULL,
  "limit"         integer,
  reset_at        timestamptz,
  observed_at     timestamptz NOT NULL DEFAULT now()
);

-- A queued task waits for its installation's rate limit to reset: the time its tracking
-- comment names ("Waiting for GitHub's rate limit to reset at …"); the claim skips the task
-- until then. NULL: never deferred. Kept after the run, so a turn shows it was deferred.
ALTER TABLE tasks ADD COLUMN deferred_until timestamptz;

-- Down Migration
ALTER TABLE tasks DROP COLUMN deferred_until;
DROP TABLE installation_rate_limits;
