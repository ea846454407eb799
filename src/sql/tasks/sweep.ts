/**
 * Sweep: the running tasks whose lease ran out are taken back from their runner, by one replica
 * at a time.
 */
import type { Pool } from "../../db/pool.js";
import { inTransaction } from "../db.js";
import { CHANNELS, notify } from "../notify.js";
import type { Row } from "./claim.js";
import { foldNewerQueued, mergeAsks } from "./fold.js";

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
            const merge = mergeAsks(await foldNewerQueued(tx, t), 2);
            await tx.query(
              `UPDATE tasks SET status = 'queued', locked_by = NULL, locked_at = NULL, heartbeat_at = NULL,
                      ${merge.set}, updated_at = now()
                WHERE id = $1`,
              [id, ...merge.params],
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
