/** The runners: each runtime's heartbeat, version, sandbox and running tasks. */
import type { PoolClient } from "../../../db/pool.js";
import { RUNNER_ALIVE_MS, type RunnerRow } from "../figures.js";

export async function runnerRows(c: PoolClient, now: Date): Promise<RunnerRow[]> {
  const { rows } = await c.query<{
    id: string;
    hostname: string;
    cli_version: string | null;
    can_resume: boolean | null;
    started_at: Date;
    heartbeat_at: Date;
    running: number;
    concurrency: number;
    running_tasks: number;
    sandbox: string | null;
  }>(
    `SELECT r.id, r.hostname, r.cli_version, r.can_resume, r.started_at, r.heartbeat_at,
            r.running, r.concurrency, r.sandbox,
            (SELECT count(*) FROM tasks t WHERE t.status = 'running' AND t.runtime_id = r.id) AS running_tasks
       FROM runtimes r
      ORDER BY r.heartbeat_at DESC, r.id
      LIMIT 100`,
  );
  return rows.map((r) => {
    const ageMs = now.getTime() - r.heartbeat_at.getTime();
    return {
      id: r.id,
      hostname: r.hostname,
      cliVersion: r.cli_version,
      canResume: r.can_resume,
      startedAt: r.started_at.toISOString(),
      heartbeatAt: r.heartbeat_at.toISOString(),
      heartbeatAgeSeconds: Math.max(0, Math.round(ageMs / 1000)),
      alive: ageMs < RUNNER_ALIVE_MS,
      running: r.running,
      concurrency: r.concurrency,
      runningTasks: r.running_tasks,
      sandbox: r.sandbox,
    };
  });
}
