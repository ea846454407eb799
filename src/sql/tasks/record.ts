/**
 * What a running turn records on its task as it goes: the resume decision, the session id, how
 * the session got here, the tracking comment, that a tool ran, what became of its changes.
 * Each write is scoped to the claiming runner and returns (or ignores) whether the lease held.
 */
import type { CliKind } from "../../core/settings.js";
import type { Queryable } from "../db.js";

export interface DecisionRecord {
  decision: "resume" | "fresh";
  reason: string;
  resumeSessionId: string | null;
  isFollowUp: boolean;
  historyEpoch: number;
  workDir: string;
  retriedFresh?: boolean;
  /** The CLI the turn runs on (the caller's: the query layer knows no CLI). */
  cli: CliKind;
  /** Reason `rewound`: the first turn of the session it rewinds past. */
  rewoundFrom?: number | null;
}

/** Store the resume decision before the CLI starts. Returns false when the lease was lost. */
export async function recordDecision(
  db: Queryable,
  taskId: number,
  runnerId: string,
  d: DecisionRecord,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE tasks SET resume_decision = $3, resume_reason = $4, resume_session_id = $5,
            is_follow_up = $6, history_epoch = $7, work_dir = $8,
            retried_fresh = retried_fresh OR $9, cli = $10, rewound_from = $11, updated_at = now()
      WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
    [
      taskId,
      runnerId,
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
  return res.rowCount === 1;
}

/** The turn runs read-only, as a plan (`/plan`). False when the lease was lost. */
export async function recordPlanTurn(
  db: Queryable,
  taskId: number,
  runnerId: string,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE tasks SET plan_turn = true, updated_at = now()
      WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
    [taskId, runnerId],
  );
  return res.rowCount === 1;
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
  const res = await db.query(
    `UPDATE tasks SET session_id = $3, updated_at = now()
      WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
    [taskId, runnerId, sessionId],
  );
  return res.rowCount === 1;
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
  const res = await db.query(
    `UPDATE tasks SET session_entry = $3, updated_at = now()
      WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
    [taskId, runnerId, entry],
  );
  return res.rowCount === 1;
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
  m: {
    restore: { from: "cache" | "store"; ms: number } | null;
    resumedAcross: boolean;
    compacted?: boolean;
  },
): Promise<void> {
  await db.query(
    `UPDATE tasks SET session_restore = $3, restore_ms = $4, resumed_across = $5,
            compacted = compacted OR $6, updated_at = now()
      WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
    [
      taskId,
      runnerId,
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
  await db.query(
    `UPDATE tasks SET tracking_comment_id = $3, updated_at = now()
      WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
    [taskId, runnerId, commentId],
  );
}

export async function markToolRan(db: Queryable, taskId: number, runnerId: string): Promise<void> {
  await db.query(
    `UPDATE tasks SET tool_ran = true WHERE id = $1 AND locked_by = $2 AND NOT tool_ran`,
    [taskId, runnerId],
  );
}

/** What became of the turn's changes (src/publish/report.ts), as the task row keeps it. */
export interface PublishRecord {
  result: "published" | "unchanged" | "refused" | "failed" | "patch" | "off";
  reason: string | null;
  detail: string | null;
  sha: string | null;
  commits: number | null;
  pullOpened: number | null;
}

export async function recordPublish(
  db: Queryable,
  taskId: number,
  runnerId: string,
  p: PublishRecord,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE tasks SET publish_result = $3, publish_reason = $4, publish_detail = $5,
            published_sha = $6, commits_pushed = $7, pull_opened = $8, updated_at = now()
      WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
    [taskId, runnerId, p.result, p.reason, p.detail, p.sha, p.commits, p.pullOpened],
  );
  return res.rowCount === 1;
}
