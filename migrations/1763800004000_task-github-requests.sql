-- Up Migration

-- GitHub requests a turn's client made (#34, "a request budget per turn"): counted by the
-- request policy's hook (src/github/request-count.ts), written as the task finishes. A 304 Not
-- Modified is not counted (GitHub does not charge it). NULL: a turn recorded before the count,
-- or one that never got a GitHub client.
ALTER TABLE tasks ADD COLUMN github_requests integer CHECK (github_requests >= 0);

-- Down Migration
ALTER TABLE tasks DROP COLUMN github_requests;
