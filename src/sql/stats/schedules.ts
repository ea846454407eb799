/**
 * The dashboard's schedules (#41; docs/operations.md "Schedules"): every schedule Tether learnt,
 * with its repository, agent, issue, last run (and how that turn stands) and next run. Not
 * windowed: a schedule that has not run for a month is still listed.
 */
import type { PoolClient } from "../../db/pool.js";

/** How many schedules the dashboard lists at most (20 a repository, 50 repositories). */
export const MAX_SCHEDULE_ROWS = 1000;

export interface ScheduleStatRow {
  repo: string;
  agent: string;
  /** The conversation's issue; null for a `title:` schedule that has not run yet. */
  issueNumber: number | null;
  /** The `title:` its issue is opened with, when the schedule names one. */
  title: string | null;
  cron: string;
  timezone: string;
  /** When its last turn was queued; null before its first. */
  lastRunAt: string | null;
  /** That turn: its task, status and outcome (null while it has none). */
  lastTask: { id: number; status: string; outcome: string | null; url: string } | null;
  nextRunAt: string;
}

export async function scheduleRows(c: PoolClient): Promise<ScheduleStatRow[]> {
  const { rows } = await c.query<{
    repo: string;
    agent: string;
    issue_number: number | null;
    title: string | null;
    cron: string;
    timezone: string;
    last_run_at: Date | null;
    next_run_at: Date;
    task_id: number | null;
    status: string | null;
    outcome: string | null;
    trigger_url: string | null;
  }>(
    `SELECT s.repo, s.agent, s.issue_number, s.title, s.cron, s.timezone, s.last_run_at,
            s.next_run_at, t.id::int AS task_id, t.status, t.outcome, t.trigger_url
       FROM schedules s
       LEFT JOIN tasks t ON t.id = s.last_task_id
      ORDER BY s.next_run_at, s.repo, s.position, s.id
      LIMIT ${MAX_SCHEDULE_ROWS}`,
  );
  return rows.map((r) => ({
    repo: r.repo,
    agent: r.agent,
    issueNumber: r.issue_number,
    title: r.title,
    cron: r.cron,
    timezone: r.timezone,
    lastRunAt: r.last_run_at?.toISOString() ?? null,
    lastTask:
      r.task_id === null
        ? null
        : {
            id: r.task_id,
            status: r.status ?? "",
            outcome: r.outcome,
            url: r.trigger_url ?? "",
          },
    nextRunAt: r.next_run_at.toISOString(),
  }));
}
