-- Up Migration

-- `/plan` and `/go` (#40, "a plan before acting"). plan_request is what the comments that fed a
-- queued task asked: 'plan' (`/plan`: run the turn read-only and answer with a plan), 'go'
-- (`/go` or a bare `@tether go`: carry out the plan the session made), NULL: neither; the latest
-- comment's ask wins when comments coalesce. plan_turn is what the runner ran: true when the
-- turn ran read-only (asked for, `plan: always` on a conversation's first turn, or a follow-up
-- of a plan turn that was not told `/go`), so the next turn knows a plan waits for `/go`.
ALTER TABLE tasks ADD COLUMN plan_request text CHECK (plan_request IN ('plan', 'go'));
ALTER TABLE tasks ADD COLUMN plan_turn boolean NOT NULL DEFAULT false;

-- Down Migration
ALTER TABLE tasks DROP COLUMN plan_turn;
ALTER TABLE tasks DROP COLUMN plan_request;
