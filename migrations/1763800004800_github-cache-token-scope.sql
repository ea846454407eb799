-- Up Migration

-- What the token that got an answer may read (#38): a fingerprint of the repositories and
-- permissions GitHub granted it (src/github/conditional-requests.ts, tokenScope). A pinned answer
-- is served without asking only to a token of the same scope: the intake's token covers the whole
-- installation, a turn's one repository, and GitHub answers a repository outside a token's scope
-- with a 404, so neither's answer, a 404 included, is the other's. NULL (answers kept before
-- this column): pinned for no scope, asked again (conditionally) and kept with one.
ALTER TABLE github_cache ADD COLUMN token_scope text;

-- Down Migration
ALTER TABLE github_cache DROP COLUMN token_scope;
