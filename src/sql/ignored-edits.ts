/**
 * `ignored_edits`: edits of a request that intake ignored because their editor may not ask
 * (#38). GitHub shows the edited text; what agents are asked stays what a permitted author
 * wrote, and a cold turn's thread marks the comment as edited by its editor.
 */
import type { Queryable } from "./db.js";

export interface IgnoredEdit {
  /** The repository's id: conversations belong to a repository by its id, not its name. */
  repoId: number;
  /** The comment's `task_comments.source`. */
  source: string;
  editor: string;
  reason: string;
}

/** Record the latest ignored edit of a comment. */
export async function recordIgnoredEdit(db: Queryable, e: IgnoredEdit): Promise<void> {
  await db.query(
    `INSERT INTO ignored_edits (repo_id, source, editor, reason) VALUES ($1, $2, $3, $4)
     ON CONFLICT (repo_id, source) DO UPDATE
       SET editor = EXCLUDED.editor, reason = EXCLUDED.reason, ignored_at = now()`,
    [e.repoId, e.source, e.editor, e.reason.slice(0, 500)],
  );
}

/** Someone who may ask edited the comment: its text is a request again, no longer marked. */
export async function clearIgnoredEdit(
  db: Queryable,
  c: { repoId: number; source: string },
): Promise<void> {
  await db.query("DELETE FROM ignored_edits WHERE repo_id = $1 AND source = $2", [
    c.repoId,
    c.source,
  ]);
}

/** Who last edited each of `sources` without being let (source → editor); others absent. */
export async function ignoredEditors(
  db: Queryable,
  repoId: number,
  sources: readonly string[],
): Promise<Map<string, string>> {
  if (!sources.length) return new Map();
  const { rows } = await db.query<{ source: string; editor: string }>(
    "SELECT source, editor FROM ignored_edits WHERE repo_id = $1 AND source = ANY($2::text[])",
    [repoId, sources],
  );
  return new Map(rows.map((r) => [r.source, r.editor]));
}
