-- Up Migration
-- How this runtime's runner runs agents, as it said at its last start: "bwrap 0.8.0" (sandboxed),
-- "off" (TETHER_SANDBOX=off: unsandboxed on purpose), or "unavailable: <why>" (no agent runs).
-- NULL for runners from before this column.
ALTER TABLE runtimes ADD COLUMN sandbox text;

-- Down Migration
ALTER TABLE runtimes DROP COLUMN sandbox;
