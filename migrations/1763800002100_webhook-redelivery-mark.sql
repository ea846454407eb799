-- Up Migration

-- The redelivery sweeper (src/intake/redelivery-sweeper.ts) reads GitHub's log of the app's
-- deliveries back to where the last sweep began, and asks GitHub to redeliver what failed. Where
-- that was is kept here, one row, so that a process down for two hours looks back over those two
-- hours when it comes back (the listing is newest first; without a mark each sweep would look
-- back a fixed stretch and miss the rest of an outage).
CREATE TABLE webhook_redelivery_mark (
  id          boolean PRIMARY KEY DEFAULT true CHECK (id),
  -- when the last sweep that walked the listing began (the process's clock)
  swept_from  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE webhook_redelivery_mark;
