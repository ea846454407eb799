import type { Pool } from "../db/pool.js";
import { keyName, type TaskKey, type TaskStatus } from "../core/task.js";
import { inTransaction, type Queryable } from "./db.js";
import { CHANNELS, notify } from "./notify.js";

/**
 * The `tasks` table (and the `task_comments` that feed each task). Organised by who calls:
 * intake (enqueue, cancel, edits of queued triggers, status) first; the runner's claim and
 * completion functions belong in their own section below.
 */

// ---------------------------------------------------------------------------------------------
// Shared types

/** A comment (or an issue body, or a pull request review) that asks an agent for something. */
export interface TriggerComment {
  /**
   * With the agent, the idempotency key of intake: `comment:<id>` (a conversation comment),
   * `review_comment:<id>` (a comment on a pull request's diff), `review:<id>` (a review's
   * body) or `issue:<id>` (an issue's body).
   */
  source: string;
  /** The comment's (or review's) id; null when the issue body itself asked. */
  commentId: number | null;
  author: string;
  url: string;
  /** What the agent reads as the request (a review comment's starts with where it sits). */
  body: string;
  /** When GitHub says it was written: orders coalesced comments, decides history membership. */
  createdAt: Date;
}

// ---------------------------------------------------------------------------------------------
// Intake: enqueue

export interface EnqueueInput {
  key: TaskKey;
  repoId: number | null;
  installationId: number;
  isPullRequest: boolean;
  comment: TriggerComment;
  forceFresh: boolean;
  deliveryId: string;
  /** The repository settings the comment was accepted under (a newer comment's replace them). */
  settings?: unknown;
  /**
   * Where the answer goes when it is not the key's own thread: a comment on the key's pull
   * request is a turn of the issue's key, answered on the pull request.
   */
  threadNumber?: number;
}

export type EnqueueResult =
  /** A new queued task. */
  | { kind: "created"; taskId: number }
  /** Added to the key's queued task, which will answer both. */
  | { kind: "coalesced"; taskId: number }
  /** This comment already fed a task for this agent: nothing new. */
  | { kind: "duplicate"; taskId: number };

/**
 * Queue a comment for its key, in one transaction: into the key's queued task if there is one
 * (coalesce), otherwise as a new queued task. The partial unique index `tasks_one_queued_per_key`
 * settles races between two intakes; `task_comments`' primary key (source, agent) makes a
 * repeated comment a no-op. A task the runner has already claimed is no longer queued, so a
 * comment arriving then becomes the next queued task: no comment is ever dropped.
 * Then NOTIFY tether_tasks (sent at commit).
 */
export async function enqueueComment(pool: Pool, input: EnqueueInput): Promise<EnqueueResult> {
  const { key, comment } = input;
  const settingsJson = input.settings === undefined ? null : JSON.stringify(input.settings);
  return inTransaction(pool, async (tx): Promise<EnqueueResult> => {
    const seen = await findCommentTask(tx, comment.source, key.agent);
    if (seen !== undefined) return { kind: "duplicate", taskId: seen };

    // Bounded: each turn of the loop follows a concurrent insert or claim that just committed.
    for (let attempt = 0; attempt < 5; attempt++) {
      const queued = await tx.query<{ id: number }>(
        `SELECT id FROM tasks
          WHERE repo = $1 AND issue_number = $2 AND agent = $3 AND status = 'queued'
          FOR UPDATE`,
        [key.repo, key.issueNumber, key.agent],
      );
      let taskId = queued.rows[0]?.id;
      let kind: "created" | "coalesced" = "coalesced";
      if (taskId !== undefined) {
        await tx.query(
          `UPDATE tasks SET force_fresh = force_fresh OR $2,
                  repo_settings = COALESCE($3::jsonb, repo_settings), updated_at = now()
            WHERE id = $1`,
          [taskId, input.forceFresh, settingsJson],
        );
      } else {
        const created = await tx.query<{ id: number }>(
          `INSERT INTO tasks (repo, repo_id, installation_id, issue_number, is_pull_request, agent,
                              trigger_comment_id, trigger_author, trigger_url, trigger_body,
                              delivery_id, force_fresh, repo_settings, thread_number)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14)
           ON CONFLICT (repo, issue_number, agent) WHERE status = 'queued' DO NOTHING
           RETURNING id`,
          [
            key.repo,
            input.repoId,
            input.installationId,
            key.issueNumber,
            input.isPullRequest,
            key.agent,
            comment.commentId,
            comment.author,
            comment.url,
            comment.body,
            input.deliveryId,
            input.forceFresh,
            settingsJson,
            input.threadNumber ?? null,
          ],
        );
        taskId = created.rows[0]?.id;
        if (taskId === undefined) continue; // another intake queued one meanwhile: coalesce into it
        kind = "created";
      }
      const added = await tx.query(
        `INSERT INTO task_comments (source, agent, task_id, comment_id, author, url, body, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (source, agent) DO NOTHING`,
        [
          comment.source,
          key.agent,
          taskId,
          comment.commentId,
          comment.author,
          comment.url,
          comment.body,
          comment.createdAt,
        ],
      );
      if (!added.rowCount) throw new DuplicateComment();
      await notify(tx, CHANNELS.tasks, String(taskId));
      return { kind, taskId };
    }
    throw new Error(
      `Could not queue ${comment.source} for ${keyName(key)}: the key's queued task kept changing; the delivery will be retried`,
    );
  }).catch(async (err: unknown): Promise<EnqueueResult> => {
    // The same comment was queued by a concurrent intake, which committed first.
    if (!(err instanceof DuplicateComment)) throw err;
    const taskId = await findCommentTask(pool, comment.source, key.agent);
    return { kind: "duplicate", taskId: taskId ?? 0 };
  });
}

class DuplicateComment extends Error {}

async function findCommentTask(
  db: Queryable,
  source: string,
  agent: string,
): Promise<number | undefined> {
  const { rows } = await db.query<{ task_id: number }>(
    "SELECT task_id FROM task_comments WHERE source = $1 AND agent = $2",
    [source, agent],
  );
  return rows[0]?.task_id;
}

// ---------------------------------------------------------------------------------------------
// Intake: /cancel

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
    const params = [key.repo, key.issueNumber, key.agent, opts.asOf];
    const cancelled = await tx.query<{ id: number }>(
      `UPDATE tasks
          SET status = 'cancelled', outcome = 'cancelled', failure_reason = $5,
              finished_at = now(), updated_at = now()
        WHERE repo = $1 AND issue_number = $2 AND agent = $3 AND status = 'queued'
          AND created_at <= $4
       RETURNING id`,
      [...params, opts.reason],
    );
    const running = await tx.query<{ id: number }>(
      `UPDATE tasks SET cancel_requested = true, updated_at = now()
        WHERE repo = $1 AND issue_number = $2 AND agent = $3 AND status = 'running'
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

// ---------------------------------------------------------------------------------------------
// Intake: edits and deletions of comments that feed queued tasks

export interface CommentRef {
  repo: string;
  issueNumber: number;
  source: string;
  commentId: number | null;
}

/**
 * A comment that feeds a still-queued task was edited: the task will read the new text.
 * Returns the ids of the tasks updated. The rows are locked first, so a runner cannot claim a
 * task between the check and the update (it skips locked rows).
 */
export async function updateQueuedComment(
  pool: Pool,
  ref: CommentRef & { body: string },
): Promise<number[]> {
  return inTransaction(pool, async (tx) => {
    const ids = await lockQueuedTasksFedBy(tx, ref);
    if (!ids.length) return [];
    await tx.query(`UPDATE task_comments SET body = $2 WHERE source = $1 AND task_id = ANY($3)`, [
      ref.source,
      ref.body,
      ids,
    ]);
    await tx.query(
      `UPDATE tasks SET trigger_body = $2, updated_at = now()
        WHERE id = ANY($1) AND trigger_comment_id IS NOT DISTINCT FROM $3`,
      [ids, ref.body, ref.commentId],
    );
    return ids;
  });
}

export interface RemovedComment {
  taskId: number;
  /** The task had no other comment left and was cancelled. */
  cancelled: boolean;
}

/**
 * A comment that feeds a still-queued task was deleted: take it out of the task. A task left
 * with no comment is cancelled; one whose trigger it was now answers its earliest remaining one.
 */
export async function removeQueuedComment(pool: Pool, ref: CommentRef): Promise<RemovedComment[]> {
  return inTransaction(pool, async (tx) => {
    const ids = await lockQueuedTasksFedBy(tx, ref);
    const out: RemovedComment[] = [];
    for (const taskId of ids) {
      await tx.query("DELETE FROM task_comments WHERE source = $1 AND task_id = $2", [
        ref.source,
        taskId,
      ]);
      const rest = await tx.query<{
        comment_id: number | null;
        author: string;
        url: string;
        body: string;
      }>(
        `SELECT comment_id, author, url, body FROM task_comments
          WHERE task_id = $1 ORDER BY created_at, source LIMIT 1`,
        [taskId],
      );
      const next = rest.rows[0];
      if (!next) {
        await tx.query(
          `UPDATE tasks SET status = 'cancelled', outcome = 'cancelled',
                  failure_reason = 'its comment was deleted before it ran',
                  finished_at = now(), updated_at = now()
            WHERE id = $1`,
          [taskId],
        );
        out.push({ taskId, cancelled: true });
        continue;
      }
      await tx.query(
        `UPDATE tasks SET trigger_comment_id = $2, trigger_author = $3, trigger_url = $4,
                trigger_body = $5, updated_at = now()
          WHERE id = $1 AND trigger_comment_id IS NOT DISTINCT FROM $6`,
        [taskId, next.comment_id, next.author, next.url, next.body, ref.commentId],
      );
      out.push({ taskId, cancelled: false });
    }
    return out;
  });
}

async function lockQueuedTasksFedBy(tx: Queryable, ref: CommentRef): Promise<number[]> {
  const { rows } = await tx.query<{ id: number }>(
    `SELECT t.id FROM tasks t
       JOIN task_comments tc ON tc.task_id = t.id
      WHERE tc.source = $1 AND t.repo = $2 AND t.issue_number = $3 AND t.status = 'queued'
      ORDER BY t.id
      FOR UPDATE OF t`,
    [ref.source, ref.repo, ref.issueNumber],
  );
  return rows.map((r) => r.id);
}

// ---------------------------------------------------------------------------------------------
// Intake: reads

/**
 * Queued tasks a comment feeds, without locking them: whether an edit has a request to rebuild
 * before anything is fetched for it. The update itself locks and checks again.
 */
export async function queuedTasksFedBy(db: Queryable, ref: CommentRef): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>(
    `SELECT t.id FROM tasks t
       JOIN task_comments tc ON tc.task_id = t.id
      WHERE tc.source = $1 AND t.repo = $2 AND t.issue_number = $3 AND t.status = 'queued'
      ORDER BY t.id`,
    [ref.source, ref.repo, ref.issueNumber],
  );
  return rows.map((r) => r.id);
}

/** Agents with any task on this issue, in order of their first task. */
export async function agentsOnIssue(
  db: Queryable,
  repo: string,
  issueNumber: number,
): Promise<string[]> {
  const { rows } = await db.query<{ agent: string }>(
    `SELECT agent FROM tasks WHERE repo = $1 AND issue_number = $2
      GROUP BY agent ORDER BY min(id)`,
    [repo, issueNumber],
  );
  return rows.map((r) => r.agent);
}

/** Does any task exist on this issue? (The webhook's cheap check for edits and deletions.) */
export async function issueHasTasks(
  db: Queryable,
  repo: string,
  issueNumber: number,
): Promise<boolean> {
  // A conversation's pull request has no tasks of its own: its comments are the issue's turns.
  const { rows } = await db.query(
    `SELECT 1 FROM tasks WHERE repo = $1 AND issue_number = $2
     UNION ALL
     SELECT 1 FROM tasks WHERE repo = $1 AND thread_number = $2
     LIMIT 1`,
    [repo, issueNumber],
  );
  return rows.length > 0;
}

export interface TaskSummary {
  id: number;
  status: TaskStatus;
  triggerAuthor: string;
  triggerUrl: string;
  createdAt: Date;
  startedAt: Date | null;
  cancelRequested: boolean;
  forceFresh: boolean;
  /** Comments the task answers (more than one when comments were coalesced). */
  comments: number;
}

export interface KeyState {
  agent: string;
  running?: TaskSummary;
  queued?: TaskSummary;
  /** The newest session a task of this key ran in, with the session's latest state. */
  lastSession?: { sessionId: string; state: string; taskId: number; lastUsedAt: Date | null };
}

/**
 * The state of each of `agents` on one issue, for /status. Reads sessions too: the key's last
 * session is found through its tasks.
 */
export async function readKeyStates(
  db: Queryable,
  repo: string,
  issueNumber: number,
  agents: readonly string[],
): Promise<KeyState[]> {
  const active = await db.query<{
    id: number;
    agent: string;
    status: TaskStatus;
    trigger_author: string;
    trigger_url: string;
    created_at: Date;
    started_at: Date | null;
    cancel_requested: boolean;
    force_fresh: boolean;
    comments: number;
  }>(
    `SELECT t.id, t.agent, t.status, t.trigger_author, t.trigger_url, t.created_at, t.started_at,
            t.cancel_requested, t.force_fresh,
            (SELECT count(*)::int FROM task_comments tc WHERE tc.task_id = t.id) AS comments
       FROM tasks t
      WHERE t.repo = $1 AND t.issue_number = $2 AND t.agent = ANY($3)
        AND t.status IN ('queued', 'running')`,
    [repo, issueNumber, agents],
  );
  const sessions = await db.query<{
    agent: string;
    id: number;
    session_id: string;
    state: string | null;
    last_used_at: Date | null;
  }>(
    `SELECT DISTINCT ON (t.agent) t.agent, t.id, t.session_id, s.state, s.last_used_at
       FROM tasks t LEFT JOIN sessions s ON s.session_id = t.session_id
      WHERE t.repo = $1 AND t.issue_number = $2 AND t.agent = ANY($3) AND t.session_id IS NOT NULL
      ORDER BY t.agent, t.id DESC`,
    [repo, issueNumber, agents],
  );
  return agents.map((agent) => {
    const state: KeyState = { agent };
    for (const r of active.rows) {
      if (r.agent !== agent) continue;
      const summary: TaskSummary = {
        id: r.id,
        status: r.status,
        triggerAuthor: r.trigger_author,
        triggerUrl: r.trigger_url,
        createdAt: r.created_at,
        startedAt: r.started_at,
        cancelRequested: r.cancel_requested,
        forceFresh: r.force_fresh,
        comments: r.comments,
      };
      if (r.status === "running") state.running = summary;
      else state.queued = summary;
    }
    const s = sessions.rows.find((r) => r.agent === agent);
    if (s)
      state.lastSession = {
        sessionId: s.session_id,
        state: s.state ?? "active",
        taskId: s.id,
        lastUsedAt: s.last_used_at,
      };
    return state;
  });
}

// ---------------------------------------------------------------------------------------------
// Runner: claim, heartbeat, complete (added by the runner)

// ---------------------------------------------------------------------------------------------
// Helpers
