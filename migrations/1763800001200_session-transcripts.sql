-- Up Migration
-- Portable sessions (issue 16): a session's transcript (the CLI's <session-id>.jsonl) kept in
-- Postgres, so any runner can restore it and a runner's disk holds only a cache.
-- One head row per session, and the transcript as gzip'd chunks of consecutive bytes: a save
-- appends a chunk with what the CLI added since the last one, or (the file was rewritten)
-- replaces them all.
CREATE TABLE session_transcripts (
  session_id    text PRIMARY KEY REFERENCES sessions (session_id) ON DELETE CASCADE,
  -- Length and sha256 of the transcript as stored: what a save compares the file's prefix to.
  raw_bytes     bigint NOT NULL DEFAULT 0,
  sha256        bytea NOT NULL,
  stored_bytes  bigint NOT NULL DEFAULT 0,
  chunks        integer NOT NULL DEFAULT 0,
  rewrites      integer NOT NULL DEFAULT 0,
  -- The transcript grew past the size bound: nothing is kept, the next turn starts fresh.
  over_bound    boolean NOT NULL DEFAULT false,
  -- `claude --version` of the runner that last saved it: which CLIs can read it.
  cli_version   text,
  saved_at      timestamptz NOT NULL DEFAULT now(),
  CHECK (NOT over_bound OR chunks = 0)
);

CREATE TABLE session_transcript_chunks (
  session_id  text NOT NULL REFERENCES session_transcripts (session_id) ON DELETE CASCADE,
  seq         integer NOT NULL,
  raw_offset  bigint NOT NULL,
  raw_bytes   integer NOT NULL,
  data        bytea NOT NULL,
  PRIMARY KEY (session_id, seq)
);
-- Already compressed: Postgres need not try again.
ALTER TABLE session_transcript_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- Whether a CLI of version `reader` can resume a transcript written by version `writer`
-- (src/core/resume-decision.ts canReadTranscript says the same): same major version, and
-- not older than the writer. Versions are `claude --version` output ("2.1.197 (Claude Code)").
CREATE FUNCTION tether_cli_reads(writer text, reader text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT COALESCE(w[1] = r[1] AND w <= r, false)
    FROM (SELECT (regexp_match(writer, '^(\d+)\.(\d+)\.(\d+)'))::int[] AS w,
                 (regexp_match(reader, '^(\d+)\.(\d+)\.(\d+)'))::int[] AS r) v
$$;

-- How the turn's session came to the runner: 'cache' (this runner's disk), 'store' (Postgres),
-- NULL (nothing restored: a fresh run, or a CLI with its own store). And whether it resumed a
-- session last used by another runtime.
ALTER TABLE tasks ADD COLUMN session_restore text CHECK (session_restore IN ('cache', 'store'));
ALTER TABLE tasks ADD COLUMN restore_ms integer;
ALTER TABLE tasks ADD COLUMN resumed_across boolean NOT NULL DEFAULT false;
-- A session compacted before this turn resumed it (the CLI's /compact), when the CLI can.
ALTER TABLE tasks ADD COLUMN compacted boolean NOT NULL DEFAULT false;

-- The runtime that last ran a turn of the session (runtime_id stays the one that made it).
ALTER TABLE sessions ADD COLUMN last_runtime_id text;

-- Down Migration
ALTER TABLE sessions DROP COLUMN last_runtime_id;
ALTER TABLE tasks DROP COLUMN compacted;
ALTER TABLE tasks DROP COLUMN resumed_across;
ALTER TABLE tasks DROP COLUMN restore_ms;
ALTER TABLE tasks DROP COLUMN session_restore;
DROP FUNCTION tether_cli_reads(text, text);
DROP TABLE session_transcript_chunks;
DROP TABLE session_transcripts;
