/**
 * Cancel (/cancel): the key's queued task is cancelled, its running one asked to stop.
 */
import type { Pool } from "../../db/pool.js";
import type { TaskKey } from "../../core/task.js";
import { inTransaction } from "../db.js";
import { CHANNELS, notify } from "../notify.js";

export interface CancelResult {
  /** Queued tasks now cancelled. */
  cancelled: number[];
  /** Running tasks flagged for their runner to stop (NOTIFY tether_cancel sent). */
  stopRequested: number[];
}

/**
 * Cancel the key's queued task and ask its running one to stop. Only tasks created before
 * `asOf` (when the /cancel arrived) are touched, so processing the same /cancel again never
 * cancels a task queued by a later comment.
 */
export async function cancelKey(
  pool: Pool,
  key: TaskKey,
  opts: { asOf: Date; reason: string },
): Promise<CancelResult> {
  return inTransaction(pool, async (tx) => {
    const params = [key.repoId, key.issueNumber, key.agent, opts.asOf];
    const cancelled = await tx.query<{ id: number }>(
      `UPDATE tasks
          SET status = 'cancelled', outcome = 'cancelled', failure_reason = $5,
              finished_at = now(), updated_at = now()
        WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND status = 'queued'
          AND created_at <= $4
       RETURNING id`,
      [...params, opts.reason],
    );
    const running = await tx.query<{ id: number }>(
      `UPDATE tasks SET cancel_requested = true, updated_at = now()
        WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND status = 'running'
          AND created_at <= $4
       RETURNING id`,
      params,
    );
    for (const r of running.rows) await notify(tx, CHANNELS.cancel, String(r.id));
    return {
      cancelled: cancelled.rows.map((r) => r.id),
      stopRequested: running.rows.map((r) => r.id),
    };
  });
}
