-- Up Migration

-- Edits of a request (a comment that fed a task) that intake ignored because their editor may
-- not ask (#38: "an edit by someone who may not ask never changes what the agent is asked").
-- GitHub shows the edited text; agents are asked what the permitted author wrote. A cold turn
-- reading the thread marks that comment as edited by its editor, from this table. One row per
-- comment: its latest ignored edit; an edit by someone who may ask removes it. Written by
-- src/sql/ignored-edits.ts.
CREATE TABLE ignored_edits (
  repo        text NOT NULL,
  -- 'comment:<id>', 'review_comment:<id>', 'issue:<id>': task_comments.source
  source      text NOT NULL,
  editor      text NOT NULL,
  reason      text NOT NULL,
  ignored_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repo, source)
);

-- Down Migration
DROP TABLE ignored_edits;
