/**
 * Claim: the runner takes the oldest queued tasks whose key has no running task; and the Task it
 * sees, with the comments that fed it. Every write after the claim is scoped to the claiming
 * runner (`locked_by`), so a runner whose task was taken back by the sweeper cannot overwrite
 * what the new owner does. The Task and its comments are core's words (src/core/task.ts).
 */
import type {
  IssueSnapshot,
  PlanRequest,
  Task,
  TaskComment,
  TaskStatus,
  TriggerContextItem,
  TriggerKind,
} from "../../core/task.js";
import type { Queryable } from "../db.js";

/** A tasks row as node-postgres returns it. */
export type Row = Record<string, unknown>;

export function toTask(r: Row): Task {
  return {
    id: r.id as number,
    repo: r.repo as string,
    repoId: r.repo_id as number,
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
    trigger: (r.trigger as TriggerKind | undefined) ?? "comment",
    forceFresh: r.force_fresh as boolean,
    requestedModel: (r.requested_model as string | null) ?? null,
    forkSessionId: (r.fork_session_id as string | null) ?? null,
    planRequest: (r.plan_request as PlanRequest | null) ?? null,
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
    issueSnapshot: (r.issue_snapshot as IssueSnapshot | null | undefined) ?? null,
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
  /** This runner's version of each CLI, by name, once known (a CLI may be probed on its first turn). */
  cliVersions: Readonly<Record<string, string | null>> = {},
  affinityWaitMs = 30_000,
  opts: {
    /**
     * TETHER_RATE_LIMIT_RESERVE: an installation whose stored headroom (installation_rate_limits)
     * is below this waits for its window to reset; 0 defers nothing on headroom.
     */
    rateLimitReserve?: number;
  } = {},
): Promise<Task[]> {
  if (limit <= 0) return [];
  // Runtime affinity, only where it matters: a session held in the shared store
  // (session_transcripts) resumes on any runner whose CLI (the one the session's cli names, its
  // version looked up in $5) reads it (tether_cli_reads), so such
  // a key's task is anyone's at once; one over the size bound starts fresh anyway. A session
  // only its runtime holds (from before the store), or one this CLI cannot read, is left to
  // that runtime while it is alive — for affinityWaitMs at most, after which anyone takes it
  // (and starts fresh with runtime_mismatch) rather than letting it starve.
  const { rows } = await db.query(
    `WITH candidates AS (
       SELECT t.id FROM tasks t
        WHERE t.status = 'queued'
          -- Near an installation's rate limit, its tasks wait for the reset (#34); another
          -- installation's are not held up. A task told to wait (deferred_until) waits too.
          -- (Written as IS NOT TRUE, not "IS NULL OR <= now()": the planner's guess at that OR
          -- halved bench/claim.ts's throughput, 1,000 → 550 tasks/s here.)
          AND (t.deferred_until > now()) IS NOT TRUE
          AND NOT EXISTS (
            SELECT 1 FROM installation_rate_limits l
             WHERE l.installation_id = t.installation_id
               AND l.remaining < $6 AND l.reset_at > now())
          AND NOT EXISTS (
            SELECT 1 FROM tasks r
             WHERE r.repo_id = t.repo_id AND r.issue_number = t.issue_number AND r.agent = t.agent
               AND r.status = 'running')
          AND (t.created_at < now() - make_interval(secs => $4::double precision / 1000)
               OR COALESCE((
                 SELECT COALESCE(s.last_runtime_id, s.runtime_id) = $2
                        OR COALESCE(tr.over_bound, false) OR tether_cli_reads(tr.cli_version,
                                                                   $5::jsonb ->> s.cli)
                        OR rt.heartbeat_at IS NULL OR rt.stopped_at IS NOT NULL
                        OR rt.heartbeat_at < now() - interval '1 minute'
                   FROM sessions s
                   LEFT JOIN runtimes rt ON rt.id = COALESCE(s.last_runtime_id, s.runtime_id)
                   LEFT JOIN session_transcripts tr
                          ON tr.session_id = s.session_id AND tr.repo_id = s.repo_id
                         AND tr.issue_number = s.issue_number AND tr.agent = s.agent
                  WHERE s.repo_id = t.repo_id AND s.issue_number = t.issue_number AND s.agent = t.agent
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
    [
      runnerId,
      runtimeId,
      limit,
      affinityWaitMs,
      JSON.stringify(cliVersions),
      opts.rateLimitReserve ?? 0,
    ],
  );
  return rows
    .map(toTask)
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id - b.id);
}

/** Every comment that fed the task, oldest first (several when comments coalesced while it waited). */
export async function taskComments(db: Queryable, taskId: number): Promise<TaskComment[]> {
  const { rows } = await db.query(
    `SELECT comment_id, author, url, body, created_at, context FROM task_comments
      WHERE task_id = $1 ORDER BY created_at, comment_id NULLS FIRST`,
    [taskId],
  );
  return rows.map((r) => ({
    commentId: (r.comment_id as number | null) ?? null,
    author: r.author as string,
    url: r.url as string,
    body: r.body as string,
    createdAt: r.created_at as Date,
    context: readContext(r.context),
  }));
}

/** task_comments.context as written by enqueue; anything else is dropped, never thrown. */
function readContext(v: unknown): TriggerContextItem[] {
  if (!Array.isArray(v)) return [];
  return v.filter(
    (x): x is TriggerContextItem =>
      typeof x === "object" &&
      x !== null &&
      ["kind", "author", "url", "body", "location"].every(
        (k) => typeof (x as Record<string, unknown>)[k] === "string",
      ),
  );
}
