-- Up Migration

-- What Tether learned about a repository from GitHub's answers, so that every runner knows it
-- and no turn asks GitHub the failing question again (src/sql/repo-facts.ts).
CREATE TABLE repo_facts (
  repo               text PRIMARY KEY,          -- owner/name, lower case
  -- When GitHub last refused a draft pull request here ("Draft pull requests are not supported
  -- in this repository": a private repository on a Free or Pro plan). Pull requests are opened
  -- ready for review while it is recent; NULL: drafts work, or were never refused.
  drafts_refused_at  timestamptz,
  updated_at         timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE repo_facts;
