/**
 * Folding: two tasks of one key become one, and what the later comment asked for beyond a turn
 * merges into the task that stays. Enqueue coalesces a comment into the key's queued task; the
 * sweeper and a rate-limit requeue (src/sql/rate-limits.ts) fold the key's queued task into the
 * running one going back to the queue. All three merge the asks the same way, through
 * mergeAsks().
 */
import type { PlanRequest } from "../../core/task.js";
import type { Queryable } from "../db.js";
import type { Row } from "./claim.js";

/** What a comment asks of its turn besides the turn itself. */
export interface TurnAsks {
  /** `/fresh`: once asked, it stays asked (`/resume` takes it back: unforceFresh). */
  forceFresh: boolean;
  /** `/model <name>`; null: none named, the task's stays. */
  requestedModel: string | null;
  /** `/from <agent>`: the session to fork; null: none named, the task's stays. */
  forkSessionId: string | null;
  /** `/plan` or `/go`; null: none asked, the task's stays. */
  planRequest: PlanRequest | null;
}

/**
 * The SET items that merge `asks` into a task row, their parameters numbered from `$first` (four
 * of them, in `params`): a fresh session once asked stays asked; a named model, fork or plan
 * replaces the task's, and none named keeps it (the latest asked wins).
 */
export function mergeAsks(asks: TurnAsks, first: number): { set: string; params: unknown[] } {
  const [fresh, model, fork, plan] = [first, first + 1, first + 2, first + 3];
  return {
    set: `force_fresh = force_fresh OR $${fresh},
          requested_model = COALESCE($${model}, requested_model),
          fork_session_id = COALESCE($${fork}, fork_session_id),
          plan_request = COALESCE($${plan}, plan_request)`,
    params: [asks.forceFresh, asks.requestedModel, asks.forkSessionId, asks.planRequest],
  };
}

/**
 * A running task about to go back to the queue takes in its key's queued task, if a comment
 * came meanwhile (at most one task per key is queued): its comments move over, it goes, and what
 * it asked for is returned for the caller to merge (mergeAsks; nothing asked when there was
 * none). Run inside the caller's transaction, with `t` locked.
 */
export async function foldNewerQueued(tx: Queryable, t: Row): Promise<TurnAsks> {
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
  return {
    forceFresh: q?.force_fresh === true,
    requestedModel: (q?.requested_model as string | null) ?? null,
    forkSessionId: (q?.fork_session_id as string | null) ?? null,
    planRequest: (q?.plan_request as PlanRequest | null) ?? null,
  };
}
