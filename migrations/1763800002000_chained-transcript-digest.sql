-- Up Migration
-- A save's cost no longer grows with the transcript (issue 16: a turn's save under 5% of a
-- turn at 50 MB). The digest a head carries was the sha256 of the whole file, so every save
-- hashed every byte again. Scheme 2 chains it over the stored chunks:
--   d0 = sha256(''), dk = sha256(d(k-1) || sha256(chunk k's raw bytes)),
-- so an append hashes only what it adds. Heads saved before (scheme 1) are stored whole once,
-- at their next save, under scheme 2.
ALTER TABLE session_transcripts
  ADD COLUMN digest_scheme smallint NOT NULL DEFAULT 1 CHECK (digest_scheme IN (1, 2));

-- Down Migration
-- Scheme 2 digests cannot be read as whole-file ones: drop them, their sessions start fresh.
DELETE FROM session_transcripts WHERE digest_scheme = 2;
ALTER TABLE session_transcripts DROP COLUMN digest_scheme;
