/**
 * The tasks table, answer-outbox side: finished tasks whose final answer the thread has not
 * heard yet (`answer_pending`). finishTask and sweepExpired (tasks/finish.ts, tasks/sweep.ts) put answers here;
 * the runner's answer poster claims due ones, posts them and records the outcome.
 *
 * A claim is the one lease: it moves `answer_next_at` a lease ahead and counts the attempt, so
 * another runner replica skips the row (SKIP LOCKED while the claim commits, then the future
 * `answer_next_at`). Every later write is a compare-and-set on the attempt the claim returned,
 * so an answer poster whose lease ran out and whose row was claimed again cannot overwrite the newer
 * posting's result.
 */
import type { Outcome, Usage } from "../core/task.js";
import type { Queryable } from "./db.js";
import type { Task } from "../core/task.js";
import { toTask } from "./tasks/claim.js";

type Row = Record<string, unknown>;

/** A claimed pending answer and what rendering it needs when no body was stored. */
export interface PendingAnswer {
  task: Task;
  /** The rendered, scrubbed body; null: render the failure from the facts below. */
  body: string | null;
  /** This try's number, 1-based (the claim counted it). */
  attempt: number;
  outcome: Outcome | null;
  failureReason: string | null;
  resumeDecision: "resume" | "fresh" | null;
  resumeReason: string | null;
  usage: Usage | null;
}

function toPendingAnswer(r: Row): PendingAnswer {
  const num = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
  return {
    task: toTask(r),
    body: (r.answer_body as string | null) ?? null,
    attempt: r.answer_attempts as number,
    outcome: (r.outcome as Outcome | null) ?? null,
    failureReason: (r.failure_reason as string | null) ?? null,
    resumeDecision: (r.resume_decision as "resume" | "fresh" | null) ?? null,
    resumeReason: (r.resume_reason as string | null) ?? null,
    usage:
      r.input_tokens === null || r.input_tokens === undefined
        ? null
        : {
            model: (r.model as string | null) ?? null,
            inputTokens: num(r.input_tokens),
            outputTokens: num(r.output_tokens),
            cacheReadTokens: num(r.cache_read_tokens),
            cacheCreationTokens: num(r.cache_creation_tokens),
            contextTokens: r.context_tokens === null ? null : num(r.context_tokens),
            costUsd: num(r.cost_usd),
            numTurns: num(r.num_turns),
            durationMs: num(r.duration_ms),
          },
  };
}

/**
 * Claim up to `limit` due pending answers, oldest due first, in one statement, leasing each for
 * `leaseMs` (a posting that outlives it may be claimed again elsewhere).
 */
export async function claimAnswers(
  db: Queryable,
  limit: number,
  leaseMs: number,
): Promise<PendingAnswer[]> {
  if (limit <= 0) return [];
  const { rows } = await db.query(
    `WITH due AS (
       SELECT id FROM tasks
        WHERE answer_pending AND answer_next_at <= now()
        ORDER BY answer_next_at, id
        LIMIT $1
        FOR UPDATE SKIP LOCKED)
     UPDATE tasks t
        SET answer_attempts = t.answer_attempts + 1,
            answer_next_at = now() + make_interval(secs => $2::double precision / 1000)
       FROM due
      WHERE t.id = due.id
     RETURNING t.*`,
    [limit, leaseMs],
  );
  return rows.map((r) => toPendingAnswer(r as Row)).sort((a, b) => a.task.id - b.task.id);
}

/** The answer is in the thread: record its comment and clear the outbox. False: lease lost. */
export async function answerPosted(
  db: Queryable,
  taskId: number,
  attempt: number,
  commentId: number,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE tasks
        SET answer_pending = false, answer_comment_id = $3,
            tracking_comment_id = COALESCE(tracking_comment_id, $3),
            answer_body = NULL, answer_next_at = NULL, answer_error = NULL, updated_at = now()
      WHERE id = $1 AND answer_pending AND answer_attempts = $2`,
    [taskId, attempt, commentId],
  );
  return res.rowCount === 1;
}

/**
 * The posting failed: try again in `waitMs`, keeping the error for operators. `commentId`, when
 * the posting found or made the task's comment before failing, is kept so the next one edits it.
 */
export async function retryAnswer(
  db: Queryable,
  taskId: number,
  attempt: number,
  waitMs: number,
  error: string,
  commentId: number | null = null,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE tasks
        SET answer_next_at = now() + make_interval(secs => $3::double precision / 1000),
            answer_error = $4, tracking_comment_id = COALESCE(tracking_comment_id, $5),
            updated_at = now()
      WHERE id = $1 AND answer_pending AND answer_attempts = $2`,
    [taskId, attempt, waitMs, error, commentId],
  );
  return res.rowCount === 1;
}

/**
 * Stop trying: the answer stays unposted, `answer_error` says why and `answer_body` keeps what
 * would have been posted, for an operator to read.
 */
export async function giveUpAnswer(
  db: Queryable,
  taskId: number,
  attempt: number,
  error: string,
): Promise<boolean> {
  const res = await db.query(
    `UPDATE tasks
        SET answer_pending = false, answer_next_at = NULL, answer_error = $3, updated_at = now()
      WHERE id = $1 AND answer_pending AND answer_attempts = $2`,
    [taskId, attempt, error],
  );
  return res.rowCount === 1;
}

/** Answers waiting for GitHub, due or not. */
export async function countPendingAnswers(db: Queryable): Promise<number> {
  const { rows } = await db.query(`SELECT count(*)::int AS n FROM tasks WHERE answer_pending`);
  return (rows[0]?.n as number | undefined) ?? 0;
}
