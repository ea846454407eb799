-- Up Migration

-- The last answer GitHub gave to a GET, per installation, request (URL and Accept) and token
-- (#34, "cut what can be cut"): the next identical GET sends its ETag (If-None-Match) or its
-- Last-Modified (If-Modified-Since), and a 304 Not Modified, which GitHub does not count
-- against the rate limit, is answered with the body kept here (src/github/conditional-requests.ts).
-- In Postgres rather than in each process: GitHub's ETags are good only for the token that got
-- them, but Last-Modified is good for any, a pinned answer (below) is good for every process
-- until a push says otherwise, and the push arrives at one web process only.
CREATE TABLE github_cache (
  installation_id bigint NOT NULL,
  -- The URL with its query, a space, and the Accept header (a raw read differs from a JSON one).
  request text NOT NULL,
  -- sha256 of the token, cut to 16 hex characters: which token the ETag belongs to. Never the token.
  token_fingerprint text NOT NULL,
  -- What a push invalidates a pinned answer by: `owner/name` (lower case) for a read of the
  -- default branch's files. NULL: never pinned.
  scope text,
  etag text,
  last_modified text,
  -- 200, or 404 for a pinned read of a file that is not there.
  status smallint NOT NULL,
  -- The answer's content-type, etag and last-modified headers.
  headers jsonb NOT NULL,
  body jsonb,
  -- Served without asking GitHub while no push to `scope` came after `validated_at` (and for an
  -- hour at most), once a push to `scope` has been seen at all: the repository config.
  pinned boolean NOT NULL DEFAULT false,
  -- When the answer was last known current (the database's clock when its request started).
  validated_at timestamptz NOT NULL,
  PRIMARY KEY (installation_id, request, token_fingerprint)
);
CREATE INDEX github_cache_validated_at ON github_cache (validated_at);

-- The last push to a scope's default branch (a `push` webhook): pinned answers validated before
-- it are asked again (conditionally).
CREATE TABLE github_cache_pushes (
  scope text PRIMARY KEY,
  pushed_at timestamptz NOT NULL
);

-- The turn's conditional requests GitHub answered 304 Not Modified (not counted against the
-- limit, so not in github_requests). NULL: a turn recorded before this count.
ALTER TABLE tasks ADD COLUMN github_requests_not_modified integer
  CHECK (github_requests_not_modified >= 0);

-- The issue as the webhook that queued the task carried it (title, body, author, link, its
-- updated_at): a turn on an issue reads it from here instead of asking GitHub again, whose answer
-- changes with every comment and so is never a free 304. Coalesced comments keep the newest.
-- NULL: a task from another trigger, on a pull request, or queued before this column.
ALTER TABLE tasks ADD COLUMN issue_snapshot jsonb;

-- Down Migration
ALTER TABLE tasks DROP COLUMN issue_snapshot;
ALTER TABLE tasks DROP COLUMN github_requests_not_modified;
DROP TABLE github_cache_pushes;
DROP TABLE github_cache;
