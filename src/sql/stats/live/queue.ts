/**
 * Queue health: depth, the oldest queued task, running tasks, live runners, pending answers, and
 * tasks waiting for a GitHub rate limit's reset.
 */
import type { PoolClient } from "../../../db/pool.js";
import { RUNNER_ALIVE_MS, type QueueFigures } from "../figures.js";

export async function queueFigures(c: PoolClient, now: Date): Promise<QueueFigures> {
  // Scalar subqueries so each one uses its own partial index (tasks_queue,
  // tasks_running_lease, tasks_answer_due); the runtimes table is small.
  const { rows } = await c.query<{
    depth: number;
    oldest: Date | null;
    running: number;
    runners_alive: number;
    answers_pending: number;
    deferred: number;
  }>(
    `SELECT (SELECT count(*) FROM tasks WHERE status = 'queued') AS depth,
            (SELECT min(created_at) FROM tasks WHERE status = 'queued') AS oldest,
            (SELECT count(*) FROM tasks WHERE status = 'running') AS running,
            (SELECT count(*) FROM runtimes WHERE heartbeat_at > $1) AS runners_alive,
            (SELECT count(*) FROM tasks WHERE answer_pending) AS answers_pending,
            (SELECT count(*) FROM tasks WHERE status = 'queued' AND deferred_until > now())
              AS deferred`,
    [new Date(now.getTime() - RUNNER_ALIVE_MS)],
  );
  const r = rows[0];
  if (!r) throw new Error("queue figures query returned no row");
  return {
    depth: r.depth,
    oldestCreatedAt: r.oldest ? r.oldest.toISOString() : null,
    oldestAgeSeconds: r.oldest
      ? Math.max(0, Math.round((now.getTime() - r.oldest.getTime()) / 1000))
      : null,
    running: r.running,
    runnersAlive: r.runners_alive,
    answersPending: r.answers_pending,
    deferred: r.deferred,
  };
}
