/**
 * The tasks table, runner side: claim, lease, pin, record, finish. Every write after the claim
 * is scoped to the claiming runner (`locked_by`), so a runner whose task was taken back by the
 * sweeper cannot overwrite what the new owner does.
 */
import type { Pool } from "../db/pool.js";
import type { Outcome, TaskStatus, Usage } from "../core/task.js";
import type { Queryable } from "./db.js";
import { CHANNELS, notify } from "./notify.js";

export interface TaskComment {
  commentId: number | null;
  author: string;
  url: string;
  body: string;
  createdAt: Date;
}

/** A task as the runner sees it. */
export interface Task {
  id: number;
  repo: string;
  repoId: number | null;
  installationId: number;
  issueNumber: number;
  /** Where the task's comments go: the key's own thread, or the key's pull request. */
  threadNumber: number;
  isPullRequest: boolean;
  agent: string;
  status: TaskStatus;
  triggerCommentId: number | null;
  triggerAuthor: string;
  triggerUrl: string;
  triggerBody: string;
  forceFresh: boolean;
  cancelRequested: boolean;
  runtimeId: string | null;
  sessionId: string | null;
  trackingCommentId: number | null;
  answerCommentId: number | null;
  attempts: number;
  maxAttempts: number;
  createdAt: Date;
  startedAt: Date | null;
  /** The settings snapshot intake stored (src/config/repo-settings.ts), unread. */
  repoSettings: unknown;
}

type Row = Record<string, unknown>;

export function toTask(r: Row): Task {
  return {
    id: r.id as number,
    repo: r.repo as string,
    repoId: (r.repo_id as number | null) ?? null,
    installationId: r.installation_id as number,
    issueNumber: r.issue_number as number,
    threadNumber: ((r.thread_number as number | null) ?? r.issue_number) as number,
    isPullRequest: r.is_pull_request as boolean,
    agent: r.agent as string,
    status: r.status as TaskStatus,
    triggerCommentId: (r.trigger_comment_id as number | null) ?? null,
    triggerAuthor: r.trigger_author as string,
    triggerUrl: r.trigger_url as string,
    triggerBody: r.trigger_body as string,
    forceFresh: r.force_fresh as boolean,
    cancelRequested: r.cancel_requested as boolean,
    runtimeId: (r.runtime_id as string | null) ?? null,
    sessionId: (r.session_id as string | null) ?? null,
    trackingCommentId: (r.tracking_comment_id as number | null) ?? null,
    answerCommentId: (r.answer_comment_id as number | null) ?? null,
    attempts: r.attempts as number,
    maxAttempts: r.max_attempts as number,
    createdAt: r.created_at as Date,
    startedAt: (r.started_at as Date | null) ?? null,
    repoSettings: r.repo_settings ?? null,
  };
}

/**
 * Claim up to `limit` of the oldest queued tasks whose key has no running task, in one
 * statement. SKIP LOCKED lets many runners claim at once without waiting on each other; the
 * partial unique index on running tasks is the last word if two ever raced for one key.
 */
export async function claimTasks(
  db: Queryable,
  runnerId: string,
  runtimeId: string,
  limit: number,
  cliVersion: string | null = null,
  affinityWaitMs = 30_000,
  /** This runner's Codex version, once known (Codex is probed on its first turn). */
  codexVersion: string | null = null,
): Promise<Task[]> {
  if (limit <= 0) return [];
  // Runtime affinity, only where it matters: a session held in the shared store
  // (session_transcripts) resumes on any runner whose CLI (Claude's or Codex's, as the session's
  // cli says) reads it (tether_cli_reads), so such
  // a key's task is anyone's at once; one over the size bound starts fresh anyway. A session
  // only its runtime holds (from before the store), or one this CLI cannot read, is left to
  // that runtime while it is alive — for affinityWaitMs at most, after which anyone takes it
  // (and starts fresh with runtime_mismatch) rather than letting it starve.
  const { rows } = await db.query(
    `WITH candidates AS (
       SELECT t.id FROM tasks t
        WHERE t.status = 'queued'
          AND NOT EXISTS (
            SELECT 1 FROM tasks r
             WHERE r.repo = t.repo AND r.issue_number = t.issue_number AND r.agent = t.agent
               AND r.status = 'running')
          AND (t.created_at < now() - make_interval(secs => $4::double precision / 1000)
               OR COALESCE((
                 SELECT COALESCE(s.last_runtime_id, s.runtime_id) = $2
                        OR COALESCE(tr.over_bound, false) OR tether_cli_reads(tr.cli_version,
                             CASE s.cli WHEN 'codex' THEN $6 ELSE $5 END)
                        OR rt.heartbeat_at IS NULL OR rt.stopped_at IS NOT NULL
                        OR rt.heartbeat_at < now() - interval '1 minute'
                   FROM sessions s
                   LEFT JOIN runtimes rt ON rt.id = COALESCE(s.last_runtime_id, s.runtime_id)
                   LEFT JOIN session_transcripts tr ON tr.session_id = s.session_id
                  WHERE s.repo = t.repo AND s.issue_number = t.issue_number AND s.agent = t.agent
                  ORDER BY s.last_used_at DESC LIMIT 1), true))
        ORDER BY t.created_at, t.id
        LIMIT $3
        FOR UPDATE SKIP LOCKED)
     UPDATE tasks t
        SET status = 'running', locked_by = $1, runtime_id = $2, locked_at = now(),
            heartbeat_at = now(), attempts = t.attempts + 1,
            started_at = COALESCE(t.started_at, now()), updated_at = now()
       FROM candidates c
      WHERE t.id = c.id
     RETURNING t.*`,
    [runnerId, runtimeId, limit, affinityWaitMs, cliVersion, codexVersion],
  );
  return rows
    .map(toTask)
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id - b.id);
}

/** Every comment that fed the task, oldest first (several when comments coalesced while it waited). */
export async function taskComments(db: Queryable, taskId: number): Promise<TaskComment[]> {
  const { rows } = await db.query(
    `SELECT comment_id, author, url, body, created_at FROM task_comments
      WHERE task_id = $1 ORDER BY created_at, comment_id NULLS FIRST`,
    [taskId],
  );
  return rows.map((r) => ({
    commentId: (r.comment_id as number | null) ?? null,
    author: r.author as string,
    url: r.url as string,
    body: r.body as string,
    createdAt: r.created_at as Date,
  }));
}

export interface DecisionRecord {
  decision: "resume" | "fresh";
  reason: string;
  resumeSessionId: string | null;
  isFollowUp: boolean;
  historyEpoch: number;
  workDir: string;
  retriedFresh?: boolean;
  /** The CLI the turn runs on; default claude. */
  cli?: "claude" | "codex";
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
            retried_fresh = retried_fresh OR $9, cli = $10, updated_at = now()
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
      d.cli ?? "claude",
    ],
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

/**
 * Where the task's final answer stands as it finishes: in the thread, or pending in the answer
 * outbox (GitHub refused it past the retries) for the deliverer to post after `retryInMs`.
 */
export type FinalAnswer =
  | { kind: "posted"; commentId: number }
  | {
      kind: "pending";
      /** The rendered, scrubbed body; null: render the failure from outcome and failureReason. */
      body: string | null;
      retryInMs: number;
    };

export interface Finish {
  status: Extract<TaskStatus, "succeeded" | "failed" | "cancelled">;
  outcome: Outcome;
  failureReason: string | null;
  sessionId: string | null;
  usage: Usage | null;
  answer: FinalAnswer;
  /** Bytes of the prompt written to the CLI, and of the answer it gave (what the turn added to the thread). */
  promptBytes?: number | null;
  answerBytes?: number | null;
}

/**
 * Finish the task with the status its run earned, whether or not the thread has heard yet (a
 * pending answer goes to the outbox in the same statement). Scoped to its runner; returns false
 * when the lease had been lost.
 */
export async function finishTask(
  db: Queryable,
  taskId: number,
  runnerId: string,
  f: Finish,
): Promise<boolean> {
  const u = f.usage;
  const a = f.answer;
  const res = await db.query(
    `UPDATE tasks SET status = $3, outcome = $4, failure_reason = $5,
            session_id = COALESCE(session_id, $6),
            model = COALESCE($7, model), input_tokens = $8, output_tokens = $9,
            cache_read_tokens = $10, cache_creation_tokens = $11, context_tokens = $12,
            cost_usd = $13, num_turns = $14, duration_ms = $15,
            answer_comment_id = COALESCE(answer_comment_id, $16),
            answer_pending = $17, answer_body = $18,
            answer_next_at = CASE WHEN $17 THEN now() + make_interval(secs => $19::double precision / 1000) END,
            prompt_bytes = $20, answer_bytes = $21,
            finished_at = now(), updated_at = now(), locked_by = NULL, heartbeat_at = NULL
      WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
    [
      taskId,
      runnerId,
      f.status,
      f.outcome,
      f.failureReason,
      f.sessionId,
      u?.model ?? null,
      u?.inputTokens ?? null,
      u?.outputTokens ?? null,
      u?.cacheReadTokens ?? null,
      u?.cacheCreationTokens ?? null,
      u?.contextTokens ?? null,
      u?.costUsd ?? null,
      u?.numTurns ?? null,
      u?.durationMs ?? null,
      a.kind === "posted" ? a.commentId : null,
      a.kind === "pending",
      a.kind === "pending" ? a.body : null,
      a.kind === "pending" ? a.retryInMs : null,
      f.promptBytes ?? null,
      f.answerBytes ?? null,
    ],
  );
  return res.rowCount === 1;
}

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

export async function isCancelRequested(db: Queryable, taskId: number): Promise<boolean> {
  const { rows } = await db.query(`SELECT cancel_requested FROM tasks WHERE id = $1`, [taskId]);
  return rows[0]?.cancel_requested === true;
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
        await client.query("BEGIN");
        try {
          const cur = await client.query(
            `SELECT * FROM tasks WHERE id = $1 AND status = 'running'
               AND heartbeat_at < now() - make_interval(secs => $2::double precision / 1000) FOR UPDATE SKIP LOCKED`,
            [id, leaseMs],
          );
          const t = cur.rows[0] as Row | undefined;
          if (!t) {
            await client.query("ROLLBACK");
            continue;
          }
          if ((t.attempts as number) >= (t.max_attempts as number)) {
            // Nobody else will tell the thread: its runner is gone. The deliverer renders the
            // failure from failure_reason and posts it into the task's comment.
            await client.query(
              `UPDATE tasks SET status = 'failed', outcome = 'failed', locked_by = NULL, heartbeat_at = NULL,
                      failure_reason = 'the runner running it stopped responding ' || attempts || ' times',
                      answer_pending = answer_comment_id IS NULL, answer_body = NULL,
                      answer_next_at = CASE WHEN answer_comment_id IS NULL THEN now() END,
                      finished_at = now(), updated_at = now() WHERE id = $1`,
              [id],
            );
            failed.push(id);
          } else {
            const newer = await client.query(
              `SELECT id, force_fresh FROM tasks WHERE repo = $1 AND issue_number = $2 AND agent = $3
                 AND status = 'queued' FOR UPDATE`,
              [t.repo, t.issue_number, t.agent],
            );
            const q = newer.rows[0] as Row | undefined;
            if (q) {
              await client.query(`UPDATE task_comments SET task_id = $1 WHERE task_id = $2`, [
                id,
                q.id,
              ]);
              await client.query(`DELETE FROM tasks WHERE id = $1`, [q.id]);
            }
            await client.query(
              `UPDATE tasks SET status = 'queued', locked_by = NULL, locked_at = NULL, heartbeat_at = NULL,
                      force_fresh = force_fresh OR $2, updated_at = now() WHERE id = $1`,
              [id, q?.force_fresh === true],
            );
            requeued.push(id);
          }
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK").catch(() => {});
          throw err;
        }
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
