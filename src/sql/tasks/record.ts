/**
 * What a running turn records on its task as it goes: the resume decision, the session id, how
 * the session got here, the tracking comment, that a tool ran, what became of its changes.
 * Each write is scoped to the claiming runner and returns (or ignores) whether the lease held.
 */
import type { DecisionRecord, PublishRecord, SessionMove } from "../../core/turn-journal.js";
import type { Queryable } from "../db.js";

/**
 * The one shape of every write a turn makes on its task: `set` (its parameters from $3 on) under
 * the claiming runner's lease, so a runner whose task was taken back changes nothing. True: the
 * lease held and the row was written.
 */
export async function leasedUpdate(
  db: Queryable,
  taskId: number,
  runnerId: string,
  set: string,
  params: readonly unknown[],
): Promise<boolean> {
  const res = await db.query(
    `UPDATE tasks SET ${set}, updated_at = now()
      WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
    [taskId, runnerId, ...params],
  );
  return res.rowCount === 1;
}

/** Store the resume decision before the CLI starts. Returns false when the lease was lost. */
export async function recordDecision(
  db: Queryable,
  taskId: number,
  runnerId: string,
  d: DecisionRecord,
): Promise<boolean> {
  return leasedUpdate(
    db,
    taskId,
    runnerId,
    `resume_decision = $3, resume_reason = $4, resume_session_id = $5,
     is_follow_up = $6, history_epoch = $7, work_dir = $8,
     retried_fresh = retried_fresh OR $9, cli = $10, rewound_from = $11`,
    [
      d.decision,
      d.reason,
      d.resumeSessionId,
      d.isFollowUp,
      d.historyEpoch,
      d.workDir,
      d.retriedFresh ?? false,
      d.cli,
      d.rewoundFrom ?? null,
    ],
  );
}

/** The turn runs read-only, as a plan (`/plan`). False when the lease was lost. */
export async function recordPlanTurn(
  db: Queryable,
  taskId: number,
  runnerId: string,
): Promise<boolean> {
  return leasedUpdate(db, taskId, runnerId, `plan_turn = true`, []);
}

/**
 * Pin the session id the moment the CLI reports it, long before the run ends. A retry in the
 * same task (fresh after a rejected resume) pins its new id over the old one; every other write
 * keeps it (COALESCE), so nothing ever erases it.
 */
export async function pinSession(
  db: Queryable,
  taskId: number,
  runnerId: string,
  sessionId: string,
): Promise<boolean> {
  return leasedUpdate(db, taskId, runnerId, `session_id = $3`, [sessionId]);
}

/**
 * The session's message this turn's prompt hung from (AgentRunResult.entry): where a later rewind
 * to before this turn resumes the session.
 */
export async function recordSessionEntry(
  db: Queryable,
  taskId: number,
  runnerId: string,
  entry: string,
): Promise<boolean> {
  return leasedUpdate(db, taskId, runnerId, `session_entry = $3`, [entry]);
}

/**
 * How the turn's session got to this runner (restored from its cache or from the shared
 * store, and in how long), whether it resumed a session another runtime last ran, and whether
 * it was compacted first: what the dashboard counts as portability.
 */
export async function recordSessionMove(
  db: Queryable,
  taskId: number,
  runnerId: string,
  m: SessionMove,
): Promise<void> {
  await leasedUpdate(
    db,
    taskId,
    runnerId,
    `session_restore = $3, restore_ms = $4, resumed_across = $5, compacted = compacted OR $6`,
    [
      m.restore?.from ?? null,
      m.restore ? Math.round(m.restore.ms) : null,
      m.resumedAcross,
      m.compacted ?? false,
    ],
  );
}

export async function setTrackingComment(
  db: Queryable,
  taskId: number,
  runnerId: string,
  commentId: number,
): Promise<void> {
  await leasedUpdate(db, taskId, runnerId, `tracking_comment_id = $3`, [commentId]);
}

export async function markToolRan(db: Queryable, taskId: number, runnerId: string): Promise<void> {
  await db.query(
    `UPDATE tasks SET tool_ran = true WHERE id = $1 AND locked_by = $2 AND NOT tool_ran`,
    [taskId, runnerId],
  );
}

export async function recordPublish(
  db: Queryable,
  taskId: number,
  runnerId: string,
  p: PublishRecord,
): Promise<boolean> {
  return leasedUpdate(
    db,
    taskId,
    runnerId,
    `publish_result = $3, publish_reason = $4, publish_detail = $5,
     published_sha = $6, commits_pushed = $7, pull_opened = $8`,
    [p.result, p.reason, p.detail, p.sha, p.commits, p.pullOpened],
  );
}
