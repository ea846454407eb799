/**
 * Enqueue: a comment that asks an agent for something becomes a queued task of its key, or joins
 * the key's queued task (coalesced), once, however often its delivery arrives.
 */
import type { Pool } from "../../db/pool.js";
import {
  keyName,
  type IssueSnapshot,
  type PlanRequest,
  type TaskKey,
  type TriggerContextItem,
  type TriggerKind,
} from "../../core/task.js";
import { inTransaction, type Queryable } from "../db.js";
import { CHANNELS, notify } from "../notify.js";
import { mergeAsks } from "./fold.js";

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
  /** What kind of request it is; a new task takes its first request's. Default: `comment`. */
  trigger?: TriggerKind;
  /** What it brought besides its words, shown to the agent as data (core/task.ts). */
  context?: TriggerContextItem[];
}

export interface EnqueueInput {
  key: TaskKey;
  installationId: number;
  isPullRequest: boolean;
  comment: TriggerComment;
  forceFresh: boolean;
  /** `/model <name>`: the model this turn runs on instead of the agent's (the latest asked wins). */
  requestedModel?: string;
  /** `/from <agent>`: the session the turn starts as a fork of (the latest asked wins). */
  forkSessionId?: string;
  /** `/plan` or `/go` (core/task.ts PlanRequest; the latest asked wins). */
  planRequest?: PlanRequest;
  deliveryId: string;
  /** The repository settings the comment was accepted under (a newer comment's replace them). */
  settings?: unknown;
  /**
   * Where the answer goes when it is not the key's own thread: a comment on the key's pull
   * request is a turn of the issue's key, answered on the pull request.
   */
  threadNumber?: number;
  /**
   * Not queued while the key has a task started by one of these triggers waiting or running: a
   * label and an assignment arriving together for one issue make one turn (with one copy of the
   * issue as its request), even when the runner claimed the first before the second came in.
   */
  coveredBy?: readonly TriggerKind[];
  /** The key's issue as this comment's webhook carried it (not for a pull request). */
  issue?: IssueSnapshot;
}

export type EnqueueResult =
  /** A new queued task. */
  | { kind: "created"; taskId: number }
  /** Added to the key's queued task, which will answer both. */
  | { kind: "coalesced"; taskId: number }
  /** This comment already fed a task for this agent: nothing new. */
  | { kind: "duplicate"; taskId: number }
  /** The key has a queued or running task of a kind in `coveredBy`: that turn covers this one. */
  | { kind: "covered"; taskId: number };

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
  const issueJson = input.issue ? JSON.stringify(input.issue) : null;
  return inTransaction(pool, async (tx): Promise<EnqueueResult> => {
    const seen = await findCommentTask(tx, comment.source, key.agent);
    if (seen !== undefined) return { kind: "duplicate", taskId: seen };
    if (input.coveredBy?.length) {
      const covering = await tx.query<{ id: number }>(
        `SELECT id FROM tasks
          WHERE repo_id = $1 AND issue_number = $2 AND agent = $3
            AND status IN ('queued', 'running') AND trigger = ANY($4::text[])
          LIMIT 1`,
        [key.repoId, key.issueNumber, key.agent, input.coveredBy],
      );
      if (covering.rows[0]) return { kind: "covered", taskId: covering.rows[0].id };
    }

    // Bounded: each turn of the loop follows a concurrent insert or claim that just committed.
    for (let attempt = 0; attempt < 5; attempt++) {
      const queued = await tx.query<{ id: number }>(
        `SELECT id FROM tasks
          WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND status = 'queued'
          FOR UPDATE`,
        [key.repoId, key.issueNumber, key.agent],
      );
      let taskId = queued.rows[0]?.id;
      let kind: "created" | "coalesced" = "coalesced";
      if (taskId !== undefined) {
        const merge = mergeAsks(
          {
            forceFresh: input.forceFresh,
            requestedModel: input.requestedModel ?? null,
            forkSessionId: input.forkSessionId ?? null,
            planRequest: input.planRequest ?? null,
          },
          6,
        );
        await tx.query(
          `UPDATE tasks SET ${merge.set},
                  repo_settings = COALESCE($2::jsonb, repo_settings),
                  issue_snapshot = CASE
                    WHEN $3::jsonb IS NOT NULL AND (issue_snapshot IS NULL
                      OR issue_snapshot->>'updatedAt' <= $3::jsonb->>'updatedAt')
                    THEN $3::jsonb ELSE issue_snapshot END,
                  repo = $4, installation_id = $5,
                  updated_at = now()
            WHERE id = $1`,
          [
            taskId,
            settingsJson,
            issueJson,
            // GitHub's API is asked under the name (and through the installation) of the newest
            // webhook: a rename while the task waits does not send it to the old name.
            key.repo,
            input.installationId,
            ...merge.params,
          ],
        );
      } else {
        const created = await tx.query<{ id: number }>(
          `INSERT INTO tasks (repo, repo_id, installation_id, issue_number, is_pull_request, agent,
                              trigger_comment_id, trigger_author, trigger_url, trigger_body,
                              delivery_id, force_fresh, repo_settings, thread_number, trigger,
                              requested_model, fork_session_id, issue_snapshot, plan_request)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14, $15, $16, $17,
                   $18::jsonb, $19)
           ON CONFLICT (repo_id, issue_number, agent) WHERE status = 'queued' DO NOTHING
           RETURNING id`,
          [
            key.repo,
            key.repoId,
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
            comment.trigger ?? "comment",
            input.requestedModel ?? null,
            input.forkSessionId ?? null,
            issueJson,
            input.planRequest ?? null,
          ],
        );
        taskId = created.rows[0]?.id;
        if (taskId === undefined) continue; // another intake queued one meanwhile: coalesce into it
        kind = "created";
      }
      const added = await tx.query(
        `INSERT INTO task_comments (source, agent, task_id, comment_id, author, url, body,
                                    created_at, context)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)
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
          comment.context?.length ? JSON.stringify(comment.context) : null,
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

/**
 * `/resume` after a `/fresh` that has not run yet: the key's queued task no longer starts fresh,
 * so it resumes the session the person chose. Returns the task ids changed.
 */
export async function unforceFresh(db: Queryable, key: TaskKey): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>(
    `UPDATE tasks SET force_fresh = false, updated_at = now()
      WHERE repo_id = $1 AND issue_number = $2 AND agent = $3 AND status = 'queued' AND force_fresh
      RETURNING id`,
    [key.repoId, key.issueNumber, key.agent],
  );
  return rows.map((r) => r.id);
}
