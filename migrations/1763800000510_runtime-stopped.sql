-- Up Migration
-- Set when a runtime's last runner stops cleanly, cleared by its next heartbeat. Runtime
-- affinity does not hold a key's task for a runtime that has stopped.
ALTER TABLE runtimes ADD COLUMN stopped_at timestamptz;

-- Down Migration
ALTER TABLE runtimes DROP COLUMN stopped_at;
