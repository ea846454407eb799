-- Up Migration

-- webhook_deliveries becomes the intake's durable inbox. The webhook handler only inserts a row
-- (the delivery id is the idempotency key) and answers GitHub; the intake processor claims
-- pending rows, does the GitHub work and enqueues tasks. Rows already present were taken in
-- by the old path, so they start as done.
ALTER TABLE webhook_deliveries
  ADD COLUMN action          text,
  ADD COLUMN installation_id bigint,
  -- what the delivery is about, e.g. 'comment:123:created': GitHub may send the same comment
  -- under two delivery ids (a manual redelivery), and the second must create nothing new
  ADD COLUMN dedupe_key      text,
  ADD COLUMN payload         jsonb,
  ADD COLUMN status          text NOT NULL DEFAULT 'done'
                             CHECK (status IN ('pending', 'done', 'failed', 'skipped')),
  ADD COLUMN attempts        integer NOT NULL DEFAULT 0,
  ADD COLUMN max_attempts    integer NOT NULL DEFAULT 5,
  ADD COLUMN run_after       timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN locked_by       text,
  ADD COLUMN locked_at       timestamptz,
  -- why it was skipped or failed, or what it did (operators read this)
  ADD COLUMN outcome         text,
  ADD COLUMN error           text,
  ADD COLUMN processed_at    timestamptz;
ALTER TABLE webhook_deliveries ALTER COLUMN status SET DEFAULT 'pending';

CREATE UNIQUE INDEX webhook_deliveries_dedupe ON webhook_deliveries (dedupe_key);
CREATE INDEX webhook_deliveries_ready ON webhook_deliveries (run_after, received_at)
  WHERE status = 'pending';

-- Down Migration
DROP INDEX webhook_deliveries_ready;
DROP INDEX webhook_deliveries_dedupe;
ALTER TABLE webhook_deliveries
  DROP COLUMN processed_at,
  DROP COLUMN error,
  DROP COLUMN outcome,
  DROP COLUMN locked_at,
  DROP COLUMN locked_by,
  DROP COLUMN run_after,
  DROP COLUMN max_attempts,
  DROP COLUMN attempts,
  DROP COLUMN status,
  DROP COLUMN payload,
  DROP COLUMN dedupe_key,
  DROP COLUMN installation_id,
  DROP COLUMN action;
