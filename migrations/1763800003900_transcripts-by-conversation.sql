-- Up Migration
-- A stored transcript belongs to its conversation (issue 28): it is found by the task key
-- (repository, issue, agent) as well as by its session id, so an id seen elsewhere (threads
-- showed them whole) opens nothing under another key, and no other key's save can replace it.
ALTER TABLE session_transcripts
  ADD COLUMN repo text, ADD COLUMN issue_number integer, ADD COLUMN agent text;

-- Stored rows take the key of the first task that pinned their session (the one that made it);
-- a session no task pinned keeps the key its sessions row was made with.
UPDATE session_transcripts tr
   SET repo = k.repo, issue_number = k.issue_number, agent = k.agent
  FROM (SELECT s.session_id,
               COALESCE(t.repo, s.repo) AS repo,
               COALESCE(t.issue_number, s.issue_number) AS issue_number,
               COALESCE(t.agent, s.agent) AS agent
          FROM sessions s
          LEFT JOIN LATERAL (SELECT repo, issue_number, agent FROM tasks
                              WHERE tasks.session_id = s.session_id
                              ORDER BY id LIMIT 1) t ON true) k
 WHERE k.session_id = tr.session_id;
DELETE FROM session_transcripts WHERE repo IS NULL OR issue_number IS NULL OR agent IS NULL;
ALTER TABLE session_transcripts
  ALTER COLUMN repo SET NOT NULL, ALTER COLUMN issue_number SET NOT NULL,
  ALTER COLUMN agent SET NOT NULL;

ALTER TABLE session_transcript_chunks
  ADD COLUMN repo text, ADD COLUMN issue_number integer, ADD COLUMN agent text;
UPDATE session_transcript_chunks c
   SET repo = tr.repo, issue_number = tr.issue_number, agent = tr.agent
  FROM session_transcripts tr
 WHERE tr.session_id = c.session_id;
DELETE FROM session_transcript_chunks WHERE repo IS NULL;
ALTER TABLE session_transcript_chunks
  ALTER COLUMN repo SET NOT NULL, ALTER COLUMN issue_number SET NOT NULL,
  ALTER COLUMN agent SET NOT NULL;

ALTER TABLE session_transcript_chunks DROP CONSTRAINT session_transcript_chunks_session_id_fkey;
ALTER TABLE session_transcript_chunks DROP CONSTRAINT session_transcript_chunks_pkey;
ALTER TABLE session_transcripts DROP CONSTRAINT session_transcripts_pkey;
ALTER TABLE session_transcripts
  ADD CONSTRAINT session_transcripts_pkey PRIMARY KEY (repo, issue_number, agent, session_id);
ALTER TABLE session_transcript_chunks
  ADD CONSTRAINT session_transcript_chunks_pkey
    PRIMARY KEY (repo, issue_number, agent, session_id, seq),
  ADD CONSTRAINT session_transcript_chunks_head_fkey
    FOREIGN KEY (repo, issue_number, agent, session_id)
    REFERENCES session_transcripts (repo, issue_number, agent, session_id) ON DELETE CASCADE;
-- The sessions table's cascade and the collector's join find a session's rows by id.
CREATE INDEX session_transcripts_session ON session_transcripts (session_id);

-- Down Migration
DROP INDEX session_transcripts_session;
ALTER TABLE session_transcript_chunks DROP CONSTRAINT session_transcript_chunks_head_fkey;
ALTER TABLE session_transcript_chunks DROP CONSTRAINT session_transcript_chunks_pkey;
ALTER TABLE session_transcripts DROP CONSTRAINT session_transcripts_pkey;
-- One row per session id again: a key's own copy under another key's id goes.
DELETE FROM session_transcripts tr
 USING sessions s
 WHERE s.session_id = tr.session_id
   AND (s.repo, s.issue_number, s.agent) IS DISTINCT FROM (tr.repo, tr.issue_number, tr.agent);
DELETE FROM session_transcript_chunks c
 WHERE NOT EXISTS (SELECT 1 FROM session_transcripts tr
                    WHERE (tr.repo, tr.issue_number, tr.agent, tr.session_id)
                          = (c.repo, c.issue_number, c.agent, c.session_id));
ALTER TABLE session_transcripts ADD CONSTRAINT session_transcripts_pkey PRIMARY KEY (session_id);
ALTER TABLE session_transcript_chunks
  ADD CONSTRAINT session_transcript_chunks_pkey PRIMARY KEY (session_id, seq),
  ADD CONSTRAINT session_transcript_chunks_session_id_fkey
    FOREIGN KEY (session_id) REFERENCES session_transcripts (session_id) ON DELETE CASCADE;
ALTER TABLE session_transcript_chunks DROP COLUMN agent, DROP COLUMN issue_number, DROP COLUMN repo;
ALTER TABLE session_transcripts DROP COLUMN agent, DROP COLUMN issue_number, DROP COLUMN repo;
