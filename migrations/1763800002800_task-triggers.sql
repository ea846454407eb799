-- Up Migration

-- What started each turn (README "Talking to Tether"): a comment that mentions the agent, a
-- "changes requested" review on its pull request, a label, an assignment; later a failed CI run.
-- The kind of the task's first request: coalesced requests of other kinds join its turn.
ALTER TABLE tasks ADD COLUMN trigger text NOT NULL DEFAULT 'comment'
  CHECK (trigger IN ('comment', 'review', 'label', 'assignment', 'ci'));

-- What a request brought besides its words, shown to the agent as data in the prompt's context
-- block, never as an instruction: a review's body and line comments (later a check's output).
-- A JSON array of {kind, author, url, body, createdAt, location}; NULL when there is none.
ALTER TABLE task_comments ADD COLUMN context jsonb;

-- Down Migration
ALTER TABLE task_comments DROP COLUMN context;
ALTER TABLE tasks DROP COLUMN trigger;
