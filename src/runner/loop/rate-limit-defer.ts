/**
 * Near an installation's rate limit, its turns wait; they do not fail (#34). The claim leaves
 * the queued tasks of an installation whose headroom is below the reserve until its window
 * resets (src/sql/tasks/claim.ts); this module tells each such task's thread once, in what
 * becomes its tracking comment (a turn that ran into a limit it could not wait out goes back to
 * the queue instead of failing: src/runner/turn/rate-limit-requeue.ts).
 *
 * The default reserve (TETHER_RATE_LIMIT_RESERVE, src/env.ts), 100 requests: a turn's own
 * client makes 5 to 9 counted requests and intake 3 more per turn (bench/github-requests.ts,
 * docs/benchmarks.md), plus one progress edit at most every 3 s of a long run. 100 lets the
 * turns already running when the headroom falls below it finish and post their answers (a few
 * runners' worth), intake keep acknowledging new comments, and every deferred task's note go
 * out, in 2 % of the smallest hourly limit (5,000).
 */
import type { Pool } from "../../db/pool.js";
import type { Logger } from "../../log.js";
import type { Task } from "../../core/task.js";
import { attachNote, takeUntoldDeferred } from "../../sql/rate-limits.js";
import type { GitHubThread } from "../ports.js";
import { taskMarker } from "../render/thread-comments.js";

/** `HH:MM UTC` of a moment (a window is an hour long: the day goes without saying). */
export function utcClock(at: Date): string {
  return `${at.toISOString().slice(11, 16)} UTC`;
}

/** The note a deferred task's thread gets: why it waits, until when, and that it will run. */
export function renderDeferred(d: {
  taskId: number;
  agent: string;
  until: Date;
  remaining: number;
  reserve: number;
}): string {
  return [
    `⏸️ **${d.agent}**: waiting for GitHub's rate limit to reset at ${utcClock(d.until)}.`,
    "",
    `This installation has ${d.remaining} GitHub API requests left in this hour's window, below the ${d.reserve} Tether keeps in reserve, so the request stays queued and runs once the window resets. Nothing to do; \`/cancel\` to drop it.`,
    taskMarker(d.taskId),
  ].join("\n");
}

/**
 * Tell the threads of newly deferred tasks (at most `limit` a call) that they wait. A note that
 * could not be posted is not tried again in that window: the headroom it would spend is what
 * the reserve keeps. Returns the tasks told.
 */
export async function tellDeferred(o: {
  pool: Pool;
  log: Logger;
  github: (task: Task) => Promise<GitHubThread>;
  reserve: number;
  limit?: number;
}): Promise<number[]> {
  if (o.reserve <= 0) return [];
  const due = await takeUntoldDeferred(o.pool, o.reserve, o.limit ?? 10);
  const told: number[] = [];
  for (const { task, until, remaining } of due) {
    const log = o.log.child({ task: task.id, repo: task.repo, issue: task.issueNumber });
    try {
      const gh = await o.github(task);
      const body = renderDeferred({
        taskId: task.id,
        agent: task.agent,
        until,
        remaining,
        reserve: o.reserve,
      });
      let commentId = task.trackingCommentId;
      if (commentId === null) commentId = await gh.createComment(task.threadNumber, body);
      else await gh.updateComment(commentId, body);
      if (await attachNote(o.pool, task.id, commentId)) {
        log.info({ until: until.toISOString(), remaining }, "deferred until the rate limit resets");
        told.push(task.id);
      } else {
        // The window reset while the note went out and a runner took the task, with a comment of
        // its own: this one must not go on saying it waits.
        await gh.updateComment(
          commentId,
          `GitHub's rate limit reset at ${utcClock(until)}; **${task.agent}** took this request up then (see its comment below).`,
        );
      }
    } catch (err) {
      log.warn(
        { err: (err as Error).message },
        "could not tell the thread its request waits for the rate limit",
      );
    }
  }
  return told;
}
