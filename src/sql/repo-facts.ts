/**
 * The `repo_facts` table: what GitHub's answers taught about a repository, kept in Postgres so
 * every runner knows it. Today one fact: the repository refuses draft pull requests.
 */
import type { Queryable } from "./db.js";

/**
 * How long a refusal of drafts is believed. A repository made public, or an owner who moved to
 * a plan with drafts, gets them back after this; the cost of asking again is one refused request.
 */
export const DRAFTS_REFUSAL_TTL_DAYS = 30;

/** Whether GitHub refused a draft pull request on `repo` within the last DRAFTS_REFUSAL_TTL_DAYS. */
export async function draftsRefused(db: Queryable, repo: string): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM repo_facts
      WHERE repo = $1
        AND drafts_refused_at > now() - make_interval(days => $2)`,
    [repo.toLowerCase(), DRAFTS_REFUSAL_TTL_DAYS],
  );
  return rows.length > 0;
}

/** GitHub just refused a draft pull request on `repo`. */
export async function recordDraftsRefused(db: Queryable, repo: string): Promise<void> {
  await db.query(
    `INSERT INTO repo_facts (repo, drafts_refused_at) VALUES ($1, now())
     ON CONFLICT (repo) DO UPDATE SET drafts_refused_at = now(), updated_at = now()`,
    [repo.toLowerCase()],
  );
}
