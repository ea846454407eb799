/**
 * Sweep: the running tasks whose lease ran out are taken back from their runner, by one replica
 * at a time.
 */
import type { Pool } from "../../db/pool.js";
import { inTransaction } from "../db.js";
import { CHANNELS, notify } from "../notify.js";
import type { Queryable } from "../db.js";
import type { Row } from "./claim.js";

/**
 * The sweeper: tasks whose runner stopped heartbeating go back to the queue (their key's
 * newer queued task, if one arrived meanwhile, is folded into them so no comment is lost), or
 * fail once they used up their attempts, with the failure pending in the answer outbox so the
 * thread hears of it. Run by one replica at a time (advisory lock).
 */
export async function sweepExpired(
  pool: Pool,
  leaseMs: number,
): Promise<{ requeued: number[]; failed: number[] }> {
  const client = await pool.connect();
  const requeued: number[] = [];
  const failed: number[] = [];
  try {
    const lock = await client.query(
      `SELECT pg_try_advisory_lock(hashtext('tether:sweeper')) AS ok`,
    );
    if (!lock.rows[0]?.ok) return { requeued, failed };
    try {
      const { rows } = await client.query(
        `SELECT id FROM tasks WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => $1::double precision / 1000)`,
        [leaseMs],
      );
      for (const { id } of rows as Array<{ id: number }>) {
        await inTransaction(client, async (tx) => {
          const cur = await tx.query(
            `SELECT * FROM tasks WHERE id = $1 AND status = 'running'
               AND heartbeat_at < now() - make_interval(secs => $2::double precision / 1000) FOR UPDATE SKIP LOCKED`,
            [id, leaseMs],
          );
          const t = cur.rows[0] as Row | undefined;
          if (!t) return;
          if ((t.attempts as number) >= (t.max_attempts as number)) {
            // Nobody else will tell the thread: its runner is gone. The answer poster renders the
            // failure from failure_reason and posts it into the task's comment.
            await tx.query(
              `UPDATE tasks SET status = 'failed', outcome = 'failed', locked_by = NULL, heartbeat_at = NULL,
                      failure_reason = 'the runner running it stopped responding ' || attempts || ' times',
                      answer_pending = answer_comment_id IS NULL, answer_body = NULL,
                      answer_next_at = CASE WHEN answer_comment_id IS NULL THEN now() END,
                      finished_at = now(), updated_at = now() WHERE id = $1`,
              [id],
            );
            failed.push(id);
          } else {
            const q = await foldNewerQueued(tx, t);
            await tx.query(
              `UPDATE tasks SET status = 'queued', locked_by = NULL, locked_at = NULL, heartbeat_at = NULL,
                      force_fresh = force_fresh OR $2,
                      requested_model = COALESCE($3, requested_model),
                      fork_session_id = COALESCE($4, fork_session_id),
                      plan_request = COALESCE($5, plan_request), updated_at = now()
                WHERE id = $1`,
              [
                id,
                q?.force_fresh === true,
                (q?.requested_model as string | null) ?? null,
                (q?.fork_session_id as string | null) ?? null,
                (q?.plan_request as string | null) ?? null,
              ],
            );
            requeued.push(id);
          }
        });
      }
      if (requeued.length) await notify(client, CHANNELS.tasks, "sweep");
    } finally {
      await client.query(`SELECT pg_advisory_unlock(hashtext('tether:sweeper'))`);
    }
  } finally {
    client.release();
  }
  return { requeued, failed };
}

/**
 * A running task about to go back to the queue takes in its key's queued task, if a comment
 * came meanwhile (at most one task per key is queued): its comments move over, it goes, and what
 * it asked for is returned for the caller to merge (force_fresh, requested_model,
 * fork_session_id, plan_request). Run inside the caller's transaction, with `t` locked.
 */
export async function foldNewerQueued(tx: Queryable, t: Row): Promise<Row | undefined> {
  const newer = await tx.query(
    `SELECT id, force_fresh, requested_model, fork_session_id, plan_request FROM tasks WHERE repo_id = $1 AND issue_number = $2 AND agent = $3
       AND status = 'queued' FOR UPDATE`,
    [t.repo_id, t.issue_number, t.agent],
  );
  const q = newer.rows[0] as Row | undefined;
  if (q) {
    await tx.query(`UPDATE task_comments SET task_id = $1 WHERE task_id = $2`, [t.id, q.id]);
    await tx.query(`DELETE FROM tasks WHERE id = $1`, [q.id]);
  }
  return q;
}
