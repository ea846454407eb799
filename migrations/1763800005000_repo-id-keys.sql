-- Up Migration

-- Conversations belong to a repository by its id (#38 item 5, docs/security.md "A conversation
-- belongs to its repository's id"): a rename keeps them, and a new repository under an old name
-- (an org renamed, a name freed and claimed by someone else, installed on the same Tether) starts
-- with nothing. Every table a key (repository, issue, agent) is kept in is keyed by the
-- repository's id from here on. The name stays where it is shown (tasks.repo, sessions.repo,
-- conversation_branches.repo), written again by each webhook, and GitHub's API takes it.
--
-- What happens to rows whose repository id is not known:
-- * A task without repo_id (intake has always recorded it; the column only allowed NULL) takes
--   the id of the newest task under the same name that has one.
-- * A name no task ever recorded an id for gets a stand-in id below zero, one per name (-1, -2,
--   … in the names' order). No repository GitHub names has such an id: the rows stay readable on
--   the dashboard and in the figures, and the next turn under that name (with the repository's
--   real id) starts fresh, finding no session, transcript, branch or CI loop of them. A task of
--   such a name still queued or running is cancelled: which repository it was for is not known.
-- * Sessions take the id of the task under their name that ran them; the other tables (history epochs and edits,
--   conversation branches, CI loops and commits, stored transcripts) the id of the newest task of
--   the same key, else of the newest task under the same name. A row that matches no task at all
--   is deleted (its key never ran a turn this database knows of: nothing can resume from it).
-- * A name that already passed from one repository to another before this migration cannot be
--   told apart in rows without an id: they go to the repository of the newest matching task.
--
-- On disk (src/workspace/paths.ts, src/agent-cli/session-layout.ts): workspaces, mirrors and the
-- runner's transcript cache move to id-keyed paths (`_repos/<id>/issue-<n>/<agent>`,
-- `.mirrors/<id>.git`). The old `<owner>/<name>/…` directories are not used again; collection
-- removes the workspaces and cached transcripts once idle. A session whose transcript is in the
-- session store (Postgres) still resumes: the decision does not compare working directories for
-- a stored transcript, and the next turn clones a fresh checkout from a fresh mirror. A session
-- saved only on a runner's disk before the session store existed is still found there, but its
-- checkout moved, so its next turn starts fresh (workdir_changed).

-- 1. tasks
UPDATE tasks t SET repo_id = m.repo_id
  FROM (SELECT DISTINCT ON (repo) repo, repo_id FROM tasks
         WHERE repo_id IS NOT NULL ORDER BY repo, id DESC) m
 WHERE t.repo_id IS NULL AND t.repo = m.repo;
UPDATE tasks t SET repo_id = -n.n
  FROM (SELECT repo, row_number() OVER (ORDER BY repo) AS n
          FROM (SELECT DISTINCT repo FROM tasks WHERE repo_id IS NULL) d) n
 WHERE t.repo_id IS NULL AND t.repo = n.repo;
UPDATE tasks
   SET status = 'cancelled', outcome = 'cancelled', finished_at = now(), updated_at = now(),
       failure_reason = 'the repository''s id is not known (migration 1763800005000)'
 WHERE repo_id < 0 AND status IN ('queued', 'running');
ALTER TABLE tasks ALTER COLUMN repo_id SET NOT NULL;

-- The id each name stands for in the rows below that carry no better clue.
CREATE TEMPORARY TABLE repo_id_of_name ON COMMIT DROP AS
  SELECT DISTINCT ON (repo) repo, repo_id FROM tasks ORDER BY repo, id DESC;

-- 2. sessions (the name stays, for display)
ALTER TABLE sessions ADD COLUMN repo_id bigint;
-- A session pinned by tasks of two keys (a forged init line) stays the one its row names.
UPDATE sessions s SET repo_id = t.repo_id
  FROM (SELECT DISTINCT ON (session_id, repo) session_id, repo, repo_id FROM tasks
         WHERE session_id IS NOT NULL ORDER BY session_id, repo, id DESC) t
 WHERE t.session_id = s.session_id AND t.repo = s.repo;
UPDATE sessions s SET repo_id = m.repo_id
  FROM repo_id_of_name m WHERE s.repo_id IS NULL AND m.repo = s.repo;
DELETE FROM sessions WHERE repo_id IS NULL;
ALTER TABLE sessions ALTER COLUMN repo_id SET NOT NULL;
DROP INDEX sessions_key;
CREATE INDEX sessions_key ON sessions (repo_id, issue_number, agent);

-- 3. The tables keyed by (repo, issue_number, agent): the newest task of the same key, else of
-- the same name.
ALTER TABLE session_transcript_chunks DROP CONSTRAINT session_transcript_chunks_head_fkey;
CREATE FUNCTION pg_temp.key_repo_id(r text, i integer, a text) RETURNS bigint
  LANGUAGE sql STABLE AS $$
    SELECT COALESCE(
      (SELECT t.repo_id FROM tasks t WHERE t.repo = r AND t.issue_number = i AND t.agent = a
        ORDER BY t.id DESC LIMIT 1),
      (SELECT m.repo_id FROM repo_id_of_name m WHERE m.repo = r))
  $$;

ALTER TABLE conversation_branches ADD COLUMN repo_id bigint;
UPDATE conversation_branches SET repo_id = pg_temp.key_repo_id(repo, issue_number, agent);
DELETE FROM conversation_branches WHERE repo_id IS NULL;
ALTER TABLE conversation_branches ALTER COLUMN repo_id SET NOT NULL;
ALTER TABLE conversation_branches DROP CONSTRAINT conversation_branches_pkey;
ALTER TABLE conversation_branches ADD PRIMARY KEY (repo_id, issue_number, agent);
DROP INDEX conversation_branches_pull;
CREATE UNIQUE INDEX conversation_branches_pull ON conversation_branches (repo_id, pull_number)
  WHERE pull_number IS NOT NULL;

ALTER TABLE history_epochs ADD COLUMN repo_id bigint;
UPDATE history_epochs SET repo_id = pg_temp.key_repo_id(repo, issue_number, agent);
DELETE FROM history_epochs WHERE repo_id IS NULL;
ALTER TABLE history_epochs DROP CONSTRAINT history_epochs_pkey;
ALTER TABLE history_epochs DROP COLUMN repo;
ALTER TABLE history_epochs ALTER COLUMN repo_id SET NOT NULL;
ALTER TABLE history_epochs ADD PRIMARY KEY (repo_id, issue_number, agent);

ALTER TABLE history_edits ADD COLUMN repo_id bigint;
UPDATE history_edits SET repo_id = pg_temp.key_repo_id(repo, issue_number, agent);
DELETE FROM history_edits WHERE repo_id IS NULL;
ALTER TABLE history_edits DROP CONSTRAINT history_edits_pkey;
ALTER TABLE history_edits DROP COLUMN repo;
ALTER TABLE history_edits ALTER COLUMN repo_id SET NOT NULL;
ALTER TABLE history_edits ADD PRIMARY KEY (repo_id, issue_number, agent, epoch);

ALTER TABLE ci_loops ADD COLUMN repo_id bigint;
UPDATE ci_loops SET repo_id = pg_temp.key_repo_id(repo, issue_number, agent);
DELETE FROM ci_loops WHERE repo_id IS NULL; -- its ci_commits go with it (ON DELETE CASCADE)
DROP INDEX ci_loops_open;
ALTER TABLE ci_loops DROP COLUMN repo;
ALTER TABLE ci_loops ALTER COLUMN repo_id SET NOT NULL;
CREATE UNIQUE INDEX ci_loops_open ON ci_loops (repo_id, issue_number, agent) WHERE state = 'open';

ALTER TABLE ci_commits ADD COLUMN repo_id bigint;
UPDATE ci_commits c SET repo_id = l.repo_id FROM ci_loops l WHERE l.id = c.loop_id;
ALTER TABLE ci_commits DROP CONSTRAINT ci_commits_pkey;
ALTER TABLE ci_commits DROP COLUMN repo;
ALTER TABLE ci_commits ALTER COLUMN repo_id SET NOT NULL;
ALTER TABLE ci_commits ADD PRIMARY KEY (repo_id, issue_number, agent, head_sha);

ALTER TABLE session_transcripts ADD COLUMN repo_id bigint;
UPDATE session_transcripts SET repo_id = pg_temp.key_repo_id(repo, issue_number, agent);
ALTER TABLE session_transcript_chunks ADD COLUMN repo_id bigint;
UPDATE session_transcript_chunks c SET repo_id = tr.repo_id
  FROM session_transcripts tr
 WHERE (tr.repo, tr.issue_number, tr.agent, tr.session_id)
       = (c.repo, c.issue_number, c.agent, c.session_id);
DELETE FROM session_transcript_chunks WHERE repo_id IS NULL;
DELETE FROM session_transcripts WHERE repo_id IS NULL;
ALTER TABLE session_transcript_chunks DROP CONSTRAINT session_transcript_chunks_pkey;
ALTER TABLE session_transcripts DROP CONSTRAINT session_transcripts_pkey;
ALTER TABLE session_transcript_chunks DROP COLUMN repo;
ALTER TABLE session_transcripts DROP COLUMN repo;
ALTER TABLE session_transcripts ALTER COLUMN repo_id SET NOT NULL;
ALTER TABLE session_transcript_chunks ALTER COLUMN repo_id SET NOT NULL;
ALTER TABLE session_transcripts
  ADD CONSTRAINT session_transcripts_pkey PRIMARY KEY (repo_id, issue_number, agent, session_id);
ALTER TABLE session_transcript_chunks
  ADD CONSTRAINT session_transcript_chunks_pkey
    PRIMARY KEY (repo_id, issue_number, agent, session_id, seq),
  ADD CONSTRAINT session_transcript_chunks_head_fkey
    FOREIGN KEY (repo_id, issue_number, agent, session_id)
    REFERENCES session_transcripts (repo_id, issue_number, agent, session_id) ON DELETE CASCADE;

-- 4. tasks' key indexes, last: the lookups above used the name ones.
DROP INDEX tasks_one_queued_per_key;
DROP INDEX tasks_one_running_per_key;
DROP INDEX tasks_key_history;
DROP INDEX tasks_repo_spend;
DROP INDEX tasks_thread;
CREATE UNIQUE INDEX tasks_one_queued_per_key ON tasks (repo_id, issue_number, agent)
  WHERE status = 'queued';
CREATE UNIQUE INDEX tasks_one_running_per_key ON tasks (repo_id, issue_number, agent)
  WHERE status = 'running';
CREATE INDEX tasks_key_history ON tasks (repo_id, issue_number, agent, id DESC);
CREATE INDEX tasks_repo_spend ON tasks (repo_id, created_at) INCLUDE (cost_usd)
  WHERE cost_usd IS NOT NULL;
CREATE INDEX tasks_thread ON tasks (repo_id, thread_number) WHERE thread_number IS NOT NULL;
-- A dashboard page addressed by name: which repository had tasks under it last.
CREATE INDEX tasks_repo_name ON tasks (repo, id DESC);

-- Down Migration

-- Back to names: each id takes the name of its newest task. Rows of two repositories that had one
-- name come together again (the reason for the Up migration).
CREATE TEMPORARY TABLE name_of_repo_id ON COMMIT DROP AS
  SELECT DISTINCT ON (repo_id) repo_id, repo FROM tasks ORDER BY repo_id, id DESC;

DROP INDEX tasks_repo_name;
DROP INDEX tasks_thread;
DROP INDEX tasks_repo_spend;
DROP INDEX tasks_key_history;
DROP INDEX tasks_one_running_per_key;
DROP INDEX tasks_one_queued_per_key;
-- Two keys that become one may not both have a queued (or running) task: the older one goes.
UPDATE tasks t SET repo = n.repo FROM name_of_repo_id n WHERE n.repo_id = t.repo_id;
UPDATE tasks t SET status = 'cancelled', outcome = 'cancelled', finished_at = now()
 WHERE t.status = 'queued' AND EXISTS (
   SELECT 1 FROM tasks o WHERE o.status = 'queued' AND o.id > t.id
      AND (o.repo, o.issue_number, o.agent) = (t.repo, t.issue_number, t.agent));
CREATE UNIQUE INDEX tasks_one_queued_per_key ON tasks (repo, issue_number, agent) WHERE status = 'queued';
CREATE UNIQUE INDEX tasks_one_running_per_key ON tasks (repo, issue_number, agent) WHERE status = 'running';
CREATE INDEX tasks_key_history ON tasks (repo, issue_number, agent, id DESC);
CREATE INDEX tasks_repo_spend ON tasks (repo, created_at) INCLUDE (cost_usd)
  WHERE cost_usd IS NOT NULL;
CREATE INDEX tasks_thread ON tasks (repo, thread_number) WHERE thread_number IS NOT NULL;
ALTER TABLE tasks ALTER COLUMN repo_id DROP NOT NULL;

ALTER TABLE session_transcript_chunks DROP CONSTRAINT session_transcript_chunks_head_fkey;
ALTER TABLE session_transcript_chunks DROP CONSTRAINT session_transcript_chunks_pkey;
ALTER TABLE session_transcripts DROP CONSTRAINT session_transcripts_pkey;
ALTER TABLE session_transcripts ADD COLUMN repo text;
ALTER TABLE session_transcript_chunks ADD COLUMN repo text;
UPDATE session_transcripts x SET repo = n.repo FROM name_of_repo_id n WHERE n.repo_id = x.repo_id;
UPDATE session_transcript_chunks x SET repo = n.repo FROM name_of_repo_id n WHERE n.repo_id = x.repo_id;
DELETE FROM session_transcripts x WHERE repo IS NULL OR EXISTS (
  SELECT 1 FROM session_transcripts o WHERE o.repo = x.repo AND o.issue_number = x.issue_number
     AND o.agent = x.agent AND o.session_id = x.session_id AND o.repo_id > x.repo_id);
DELETE FROM session_transcript_chunks c WHERE NOT EXISTS (
  SELECT 1 FROM session_transcripts tr WHERE (tr.repo_id, tr.issue_number, tr.agent, tr.session_id)
                                           = (c.repo_id, c.issue_number, c.agent, c.session_id));
ALTER TABLE session_transcripts DROP COLUMN repo_id, ALTER COLUMN repo SET NOT NULL;
ALTER TABLE session_transcript_chunks DROP COLUMN repo_id, ALTER COLUMN repo SET NOT NULL;
ALTER TABLE session_transcripts
  ADD CONSTRAINT session_transcripts_pkey PRIMARY KEY (repo, issue_number, agent, session_id);
ALTER TABLE session_transcript_chunks
  ADD CONSTRAINT session_transcript_chunks_pkey
    PRIMARY KEY (repo, issue_number, agent, session_id, seq),
  ADD CONSTRAINT session_transcript_chunks_head_fkey
    FOREIGN KEY (repo, issue_number, agent, session_id)
    REFERENCES session_transcripts (repo, issue_number, agent, session_id) ON DELETE CASCADE;

ALTER TABLE ci_commits DROP CONSTRAINT ci_commits_pkey;
ALTER TABLE ci_commits ADD COLUMN repo text;
UPDATE ci_commits x SET repo = COALESCE(n.repo, '') FROM name_of_repo_id n WHERE n.repo_id = x.repo_id;
DELETE FROM ci_commits WHERE repo IS NULL;
DELETE FROM ci_commits x WHERE EXISTS (
  SELECT 1 FROM ci_commits o WHERE (o.repo, o.issue_number, o.agent, o.head_sha)
        = (x.repo, x.issue_number, x.agent, x.head_sha) AND o.repo_id > x.repo_id);
ALTER TABLE ci_commits DROP COLUMN repo_id, ALTER COLUMN repo SET NOT NULL;
ALTER TABLE ci_commits ADD PRIMARY KEY (repo, issue_number, agent, head_sha);

DROP INDEX ci_loops_open;
ALTER TABLE ci_loops ADD COLUMN repo text;
UPDATE ci_loops x SET repo = n.repo FROM name_of_repo_id n WHERE n.repo_id = x.repo_id;
DELETE FROM ci_loops WHERE repo IS NULL;
UPDATE ci_loops x SET state = 'stopped', ended_at = now() WHERE x.state = 'open' AND EXISTS (
  SELECT 1 FROM ci_loops o WHERE o.state = 'open' AND o.id > x.id
     AND (o.repo, o.issue_number, o.agent) = (x.repo, x.issue_number, x.agent));
ALTER TABLE ci_loops DROP COLUMN repo_id, ALTER COLUMN repo SET NOT NULL;
CREATE UNIQUE INDEX ci_loops_open ON ci_loops (repo, issue_number, agent) WHERE state = 'open';

ALTER TABLE history_edits DROP CONSTRAINT history_edits_pkey;
ALTER TABLE history_edits ADD COLUMN repo text;
UPDATE history_edits x SET repo = n.repo FROM name_of_repo_id n WHERE n.repo_id = x.repo_id;
DELETE FROM history_edits x WHERE repo IS NULL OR EXISTS (
  SELECT 1 FROM history_edits o WHERE (o.repo, o.issue_number, o.agent, o.epoch)
        = (x.repo, x.issue_number, x.agent, x.epoch) AND o.repo_id > x.repo_id);
ALTER TABLE history_edits DROP COLUMN repo_id, ALTER COLUMN repo SET NOT NULL;
ALTER TABLE history_edits ADD PRIMARY KEY (repo, issue_number, agent, epoch);

ALTER TABLE history_epochs DROP CONSTRAINT history_epochs_pkey;
ALTER TABLE history_epochs ADD COLUMN repo text;
UPDATE history_epochs x SET repo = n.repo FROM name_of_repo_id n WHERE n.repo_id = x.repo_id;
DELETE FROM history_epochs x WHERE repo IS NULL OR EXISTS (
  SELECT 1 FROM history_epochs o WHERE (o.repo, o.issue_number, o.agent)
        = (x.repo, x.issue_number, x.agent) AND o.repo_id > x.repo_id);
ALTER TABLE history_epochs DROP COLUMN repo_id, ALTER COLUMN repo SET NOT NULL;
ALTER TABLE history_epochs ADD PRIMARY KEY (repo, issue_number, agent);

DROP INDEX conversation_branches_pull;
ALTER TABLE conversation_branches DROP CONSTRAINT conversation_branches_pkey;
UPDATE conversation_branches x SET repo = n.repo FROM name_of_repo_id n WHERE n.repo_id = x.repo_id;
DELETE FROM conversation_branches x WHERE EXISTS (
  SELECT 1 FROM conversation_branches o WHERE (o.repo, o.issue_number, o.agent)
        = (x.repo, x.issue_number, x.agent) AND o.repo_id > x.repo_id);
ALTER TABLE conversation_branches DROP COLUMN repo_id;
ALTER TABLE conversation_branches ADD PRIMARY KEY (repo, issue_number, agent);
CREATE UNIQUE INDEX conversation_branches_pull ON conversation_branches (repo, pull_number)
  WHERE pull_number IS NOT NULL;

DROP INDEX sessions_key;
UPDATE sessions x SET repo = n.repo FROM name_of_repo_id n WHERE n.repo_id = x.repo_id;
ALTER TABLE sessions DROP COLUMN repo_id;
CREATE INDEX sessions_key ON sessions (repo, issue_number, agent);
