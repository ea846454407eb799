/**
 * The lease a runner holds on its running tasks: the heartbeat that keeps it (and brings back
 * cancel requests), and taking over the tasks a dead process of the same runtime left running.
 */
import type { Queryable } from "../db.js";
import type { Task } from "../../core/task.js";
import { toTask, type Row } from "./claim.js";

/**
 * Touch the lease of the tasks this runner holds and is still working on (`taskIds`; all it
 * holds when omitted); returns the ids whose cancel was requested. A task whose run crashed is
 * left out, so its lease runs out and the sweeper hands it on instead of it staying "running"
 * for as long as this process lives.
 */
export async function heartbeatTasks(
  db: Queryable,
  runnerId: string,
  taskIds?: readonly number[],
): Promise<{ held: number[]; cancel: number[] }> {
  const { rows } = await db.query(
    `UPDATE tasks SET heartbeat_at = now()
      WHERE locked_by = $1 AND status = 'running' AND ($2::bigint[] IS NULL OR id = ANY($2))
     RETURNING id, cancel_requested`,
    [runnerId, taskIds ?? null],
  );
  return {
    held: rows.map((r) => r.id as number),
    cancel: rows.filter((r) => r.cancel_requested).map((r) => r.id as number),
  };
}

/**
 * A runner starting on a runtime takes over the tasks an earlier process of the same runtime
 * left running (it crashed or was killed): they are this runtime's sessions, so this runner can
 * resume them at once instead of waiting for the sweeper. `isGone` says whether the process
 * that holds a task is dead. Each task is taken with a compare-and-set on its old holder.
 */
export async function adoptOrphans(
  db: Queryable,
  runnerId: string,
  runtimeId: string,
  isGone: (lockedBy: string) => boolean,
): Promise<Task[]> {
  const { rows } = await db.query(
    `SELECT id, locked_by FROM tasks WHERE status = 'running' AND runtime_id = $1 AND locked_by <> $2`,
    [runtimeId, runnerId],
  );
  const adopted: Task[] = [];
  for (const r of rows as Array<{ id: number; locked_by: string }>) {
    if (!isGone(r.locked_by)) continue;
    const res = await db.query(
      `UPDATE tasks SET locked_by = $2, locked_at = now(), heartbeat_at = now(),
              attempts = attempts + 1, updated_at = now()
        WHERE id = $1 AND status = 'running' AND locked_by = $3
       RETURNING *`,
      [r.id, runnerId, r.locked_by],
    );
    if (res.rows[0]) adopted.push(toTask(res.rows[0] as Row));
  }
  return adopted;
}
