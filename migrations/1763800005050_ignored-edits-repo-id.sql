-- Up Migration

-- ignored_edits (1763800004600) by the repository's id, as every conversation table is since
-- 1763800005000 (#38: "conversations belong to a repository by its id"): a rename keeps the
-- marks, a new repository under an old name starts with none. A row whose name no task ever had
-- an id for is dropped (it only marks a comment of a thread no turn can read again).
ALTER TABLE ignored_edits ADD COLUMN repo_id bigint;
UPDATE ignored_edits e SET repo_id = (
  SELECT t.repo_id FROM tasks t WHERE lower(t.repo) = lower(e.repo) AND t.repo_id > 0
   ORDER BY t.id DESC LIMIT 1);
DELETE FROM ignored_edits WHERE repo_id IS NULL;
ALTER TABLE ignored_edits DROP CONSTRAINT ignored_edits_pkey;
ALTER TABLE ignored_edits DROP COLUMN repo;
ALTER TABLE ignored_edits ALTER COLUMN repo_id SET NOT NULL;
ALTER TABLE ignored_edits ADD PRIMARY KEY (repo_id, source);

-- Down Migration
ALTER TABLE ignored_edits ADD COLUMN repo text;
UPDATE ignored_edits e SET repo = (
  SELECT t.repo FROM tasks t WHERE t.repo_id = e.repo_id ORDER BY t.id DESC LIMIT 1);
DELETE FROM ignored_edits WHERE repo IS NULL;
ALTER TABLE ignored_edits DROP CONSTRAINT ignored_edits_pkey;
ALTER TABLE ignored_edits DROP COLUMN repo_id;
ALTER TABLE ignored_edits ALTER COLUMN repo SET NOT NULL;
ALTER TABLE ignored_edits ADD PRIMARY KEY (repo, source);
