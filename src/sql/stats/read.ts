/** The reads: every figure of /api/stats (readStats), and the /metrics gauges' queue figures. */
import type { Pool } from "../../db/pool.js";
import { assemble, type StatsClis } from "./assemble.js";
import { changeRows } from "./turns/changes.js";
import { LATEST_TASKS, type QueueFigures, type Stats } from "./figures.js";
import { latestTasks } from "./live/latest.js";
import { queueFigures } from "./live/queue.js";
import { refusedRows, repoRows } from "./turns/repos.js";
import { runnerRows } from "./live/runners.js";
import { scheduleRows } from "./schedules.js";
import { DEFAULT_STATS_TIMEOUT_MS, inSnapshot } from "./snapshot.js";
import { sessionMoves } from "./turns/sessions.js";
import { triggerRows } from "./turns/triggers.js";
import { reviewFigures } from "./effects/reviews.js";
import { mcpToolCalls } from "./effects/mcp.js";
import { ciLoopRows } from "./effects/ci-loops.js";
import { githubRequestRows } from "./effects/github-requests.js";
import { hourRows } from "./turns/by-hour.js";
import { statsWindow, type StatsRange } from "./window.js";

/**
 * Read-only queries behind /dashboard, /api/stats and the /metrics gauges.
 *
 * Turn figures come from the roll-up tables turn_stats_hourly and turn_stats_daily_repo
 * (migration 1763800000600), which triggers on tasks keep exact; so a 30-day read costs the
 * same on a table of a thousand tasks or ten million. Only the 24-hour per-repository table
 * reads tasks itself (one day of rows, by the created_at index).
 *
 * Everything here runs inside one REPEATABLE READ READ ONLY transaction with its own
 * statement_timeout, so the figures on one page agree with each other and a slow database
 * cancels the query instead of holding a connection (and an HTTP request) forever.
 */

export interface ReadStatsOptions {
  range: StatsRange;
  now: Date;
  timeoutMs?: number;
  /** The registered CLIs (src/cli-registry.ts's STATS_CLIS). */
  clis: StatsClis;
}

/** Every figure /api/stats returns, from one consistent snapshot. */
export async function readStats(pool: Pool, opts: ReadStatsOptions): Promise<Stats> {
  const window = statsWindow(opts.range, opts.now);
  return inSnapshot(pool, opts.timeoutMs ?? DEFAULT_STATS_TIMEOUT_MS, async (c) => {
    const hours = await hourRows(c, window);
    const repos = await repoRows(c, window);
    const queue = await queueFigures(c, opts.now);
    const runners = await runnerRows(c, opts.now);
    const latest = await latestTasks(c, LATEST_TASKS);
    const changes = await changeRows(c, window);
    const refused = await refusedRows(c, window);
    const sessions = await sessionMoves(c, window);
    const triggers = await triggerRows(c, window);
    const ciLoops = await ciLoopRows(c, window);
    const reviews = await reviewFigures(c, window);
    const mcp = await mcpToolCalls(c, window);
    const githubRequests = await githubRequestRows(c, window);
    const schedules = await scheduleRows(c);
    return assemble(
      window,
      {
        hours,
        repos,
        queue,
        runners,
        latest,
        changes,
        refused,
        sessions,
        triggers,
        ciLoops,
        reviews,
        mcpToolCalls: mcp,
        githubRequests,
        schedules,
      },
      opts.clis,
    );
  });
}

/** Queue depth, oldest queued age, running tasks and live runners: what the /metrics gauges show. */
export async function readQueueFigures(
  pool: Pool,
  opts: { now: Date; timeoutMs: number },
): Promise<QueueFigures> {
  return inSnapshot(pool, opts.timeoutMs, (c) => queueFigures(c, opts.now));
}
