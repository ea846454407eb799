-- Up Migration

-- Which repository id last held each name (#38, "names reused"). What Tether keeps by a
-- repository's name alone, GitHub's cached answers (github_cache, github_cache_pushes) and what
-- its answers taught (repo_facts), belongs to the repository that had the name then: a new
-- repository under an old name (the old one deleted, or another renamed into its place) must not
-- be served the old one's pinned `.github/tether.yml`, nor an answer an `If-Modified-Since` from
-- the old one's history could confirm. Every delivery Tether takes notes the name with its id
-- (src/sql/repo-names.ts); when the id differs, or the name was never seen, what is kept under the
-- name is dropped first, in the same statement, before anything reads the config for it.
CREATE TABLE repo_names (
  name     text PRIMARY KEY,           -- owner/name, lower case
  repo_id  bigint NOT NULL,
  seen_at  timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE repo_names;
