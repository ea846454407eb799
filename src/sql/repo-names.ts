/**
 * The `repo_names` table: which repository id last held each name (#38, "names reused"). GitHub's
 * cached answers (`github_cache`, `github_cache_pushes`) and `repo_facts` are kept by name; a new
 * repository under an old name (the old one deleted, or another renamed into its place) starts
 * with none of them. See the migration (1763800005350) for why.
 */
import type { Queryable } from "./db.js";

/**
 * Note that `name` (owner/name) is repository `repoId` now. When the name was held by another id,
 * or never seen (answers kept before this table are of an unknown holder), everything kept under
 * the name is dropped in the same statement: every cached GitHub answer about the repository's
 * URLs, pinned or not (an `If-Modified-Since` from the old one's answer could have a 304 confirm
 * it for the new one, whose history may be older), and its repo_facts. The pushes seen under the
 * name stay: they say the app receives the name's pushes, which holds for the new holder, and
 * nothing validated before the change is left for them to end. Returns whether the name changed
 * hands. An unchanged name writes nothing.
 */
export async function noteRepoName(db: Queryable, name: string, repoId: number): Promise<boolean> {
  const lower = name.toLowerCase();
  const { rows } = await db.query<{ changed: boolean }>(
    `WITH moved AS (
       INSERT INTO repo_names AS n (name, repo_id) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET repo_id = EXCLUDED.repo_id, seen_at = now()
         WHERE n.repo_id <> EXCLUDED.repo_id
       RETURNING 1
     ),
     answers AS (
       DELETE FROM github_cache
        WHERE EXISTS (SELECT 1 FROM moved)
          AND (scope = $1 OR position($3 in lower(request)) > 0)
       RETURNING 1
     ),
     facts AS (
       DELETE FROM repo_facts WHERE EXISTS (SELECT 1 FROM moved) AND repo = $1 RETURNING 1
     )
     SELECT EXISTS (SELECT 1 FROM moved) AS changed`,
    [lower, repoId, `/repos/${lower}/`],
  );
  return rows[0]?.changed === true;
}
