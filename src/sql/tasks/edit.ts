/**
 * Edits and deletions of the comments that feed still-queued tasks: the task reads the new
 * text, or loses the comment (and is cancelled when none is left).
 */
import type { Pool } from "../../db/pool.js";
import { inTransaction, type Queryable } from "../db.js";
import type { IssueSnapshot } from "../../core/task.js";

export interface CommentRef {
  repoId: number;
  issueNumber: number;
  source: string;
  commentId: number | null;
}

/**
 * A comment that feeds a still-queued task was edited: the task will read the new text.
 * Returns the ids of the tasks updated. The rows are locked first, so a runner cannot claim a
 * task between the check and the update (it skips locked rows).
 */
export async function updateQueuedComment(
  pool: Pool,
  ref: CommentRef & { body: string },
): Promise<number[]> {
  return inTransaction(pool, async (tx) => {
    const ids = await lockQueuedTasksFedBy(tx, ref);
    if (!ids.length) return [];
    await tx.query(`UPDATE task_comments SET body = $2 WHERE source = $1 AND task_id = ANY($3)`, [
      ref.source,
      ref.body,
      ids,
    ]);
    await tx.query(
      `UPDATE tasks SET trigger_body = $2, updated_at = now()
        WHERE id = ANY($1) AND trigger_comment_id IS NOT DISTINCT FROM $3`,
      [ids, ref.body, ref.commentId],
    );
    return ids;
  });
}

export interface RemovedComment {
  taskId: number;
  /** The task had no other comment left and was cancelled. */
  cancelled: boolean;
}

/**
 * A comment that feeds a still-queued task was deleted: take it out of the task. A task left
 * with no comment is cancelled; one whose trigger it was now answers its earliest remaining one.
 */
export async function removeQueuedComment(pool: Pool, ref: CommentRef): Promise<RemovedComment[]> {
  return inTransaction(pool, async (tx) => {
    const ids = await lockQueuedTasksFedBy(tx, ref);
    const out: RemovedComment[] = [];
    for (const taskId of ids) {
      await tx.query("DELETE FROM task_comments WHERE source = $1 AND task_id = $2", [
        ref.source,
        taskId,
      ]);
      const rest = await tx.query<{
        comment_id: number | null;
        author: string;
        url: string;
        body: string;
      }>(
        `SELECT comment_id, author, url, body FROM task_comments
          WHERE task_id = $1 ORDER BY created_at, source LIMIT 1`,
        [taskId],
      );
      const next = rest.rows[0];
      if (!next) {
        await tx.query(
          `UPDATE tasks SET status = 'cancelled', outcome = 'cancelled',
                  failure_reason = 'its comment was deleted before it ran',
                  finished_at = now(), updated_at = now()
            WHERE id = $1`,
          [taskId],
        );
        out.push({ taskId, cancelled: true });
        continue;
      }
      await tx.query(
        `UPDATE tasks SET trigger_comment_id = $2, trigger_author = $3, trigger_url = $4,
                trigger_body = $5, updated_at = now()
          WHERE id = $1 AND trigger_comment_id IS NOT DISTINCT FROM $6`,
        [taskId, next.comment_id, next.author, next.url, next.body, ref.commentId],
      );
      out.push({ taskId, cancelled: false });
    }
    return out;
  });
}

async function lockQueuedTasksFedBy(tx: Queryable, ref: CommentRef): Promise<number[]> {
  const { rows } = await tx.query<{ id: number }>(
    `SELECT t.id FROM tasks t
       JOIN task_comments tc ON tc.task_id = t.id
      WHERE tc.source = $1 AND t.repo_id = $2 AND t.issue_number = $3 AND t.status = 'queued'
      ORDER BY t.id
      FOR UPDATE OF t`,
    [ref.source, ref.repoId, ref.issueNumber],
  );
  return rows.map((r) => r.id);
}

/**
 * Queued tasks a comment feeds, without locking them: whether an edit has a request to rebuild
 * before anything is fetched for it. The update itself locks and checks again.
 */
export async function queuedTasksFedBy(db: Queryable, ref: CommentRef): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>(
    `SELECT t.id FROM tasks t
       JOIN task_comments tc ON tc.task_id = t.id
      WHERE tc.source = $1 AND t.repo_id = $2 AND t.issue_number = $3 AND t.status = 'queued'
      ORDER BY t.id`,
    [ref.source, ref.repoId, ref.issueNumber],
  );
  return rows.map((r) => r.id);
}

/**
 * The issue was edited: the queued tasks of its keys that read it from their snapshot
 * (tasks.issue_snapshot) read the edit instead, unless they hold a newer one. Returns their ids.
 */
export async function refreshIssueSnapshot(
  db: Queryable,
  where: { repoId: number; issueNumber: number },
  issue: IssueSnapshot,
): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>(
    `UPDATE tasks SET issue_snapshot = $3::jsonb, updated_at = now()
      WHERE repo_id = $1 AND issue_number = $2 AND status = 'queued'
        AND issue_snapshot IS NOT NULL
        AND issue_snapshot->>'updatedAt' <= $3::jsonb->>'updatedAt'
      RETURNING id`,
    [where.repoId, where.issueNumber, JSON.stringify(issue)],
  );
  return rows.map((r) => r.id);
}

/**
 * Whether a comment fed any task on these issues (queued, running or finished): it is, or was,
 * someone's request, not only context. An edit of a request must come from someone who may ask.
 */
export async function isRequest(
  db: Queryable,
  c: { repo: string; source: string; issueNumbers: readonly number[] },
): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM task_comments tc JOIN tasks t ON t.id = tc.task_id
        WHERE tc.source = $1 AND t.repo = $2 AND t.issue_number = ANY($3::int[])) AS found`,
    [c.source, c.repo, c.issueNumbers],
  );
  return rows[0]?.found === true;
}
