-- Up Migration

-- The review a pull request turn posted with the agent's line comments (src/runner/review-step.ts):
-- posted, or failed (GitHub refused it even with every comment in its body), and how many of its
-- comments landed on the diff's lines. NULL: the turn asked for no review. The dashboard and
-- /api/stats count them (`reviews`).
ALTER TABLE tasks
  ADD COLUMN review_result text CHECK (review_result IN ('posted', 'failed')),
  ADD COLUMN review_line_comments integer;

-- Down Migration
ALTER TABLE tasks DROP COLUMN review_result, DROP COLUMN review_line_comments;
