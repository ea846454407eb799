/**
 * The schedules Tether learnt from each repository's `.github/tether.yml` (table `schedules`),
 * the repositories whose schedules are to be read again (`schedule_repos`), and the one lock the
 * scheduler's sweep holds (src/intake/scheduler.ts).
 *
 * Exactly once per tick, whatever the number of processes: one sweep at a time (a session
 * advisory lock), each tick's request keyed by (schedule, tick) in task_comments (a second
 * enqueue of it is a duplicate), and the claim advances `next_run_at` only from the tick it read
 * (`AND next_run_at = $tick`), past now: a stretch missed while Tether was down runs once.
 */
import type { Pool, PoolClient } from "../db/pool.js";
import { inTransaction, type Queryable } from "./db.js";

export interface ScheduleRow {
  id: number;
  repoId: number;
  installationId: number;
  repo: string;
  key: string;
  position: number;
  cron: string;
  timezone: string;
  agent: string;
  issueNumber: number | null;
  title: string | null;
  request: string;
  nextRunAt: Date;
  lastRunAt: Date | null;
  lastTaskId: number | null;
}

/** A schedule as the config says it, with its first tick computed. */
export interface ScheduleSpec {
  key: string;
  position: number;
  cron: string;
  timezone: string;
  agent: string;
  issueNumber: number | null;
  title: string | null;
  request: string;
  /** Its next tick from now: used when the schedule is new or its cron or zone changed. */
  nextRunAt: Date;
}

export interface RepoRef {
  repoId: number;
  installationId: number;
  /** `owner/name` lower case, as tasks key it. */
  repo: string;
}

const COLUMNS = `id::int AS id, repo_id::bigint AS repo_id, installation_id::bigint AS installation_id,
  repo, schedule_key, position, cron, timezone, agent, issue_number, title, request, next_run_at,
  last_run_at, last_task_id::int AS last_task_id`;

interface Row {
  id: number;
  repo_id: string;
  installation_id: string;
  repo: string;
  schedule_key: string;
  position: number;
  cron: string;
  timezone: string;
  agent: string;
  issue_number: number | null;
  title: string | null;
  request: string;
  next_run_at: Date;
  last_run_at: Date | null;
  last_task_id: number | null;
}

function toSchedule(r: Row): ScheduleRow {
  return {
    id: r.id,
    repoId: Number(r.repo_id),
    installationId: Number(r.installation_id),
    repo: r.repo,
    key: r.schedule_key,
    position: r.position,
    cron: r.cron,
    timezone: r.timezone,
    agent: r.agent,
    issueNumber: r.issue_number,
    title: r.title,
    request: r.request,
    nextRunAt: r.next_run_at,
    lastRunAt: r.last_run_at,
    lastTaskId: r.last_task_id,
  };
}

/**
 * Ask for a repository's schedules to be read again (a push to its default branch, the app
 * installed on it). One statement, no GitHub call: the webhook handler runs it.
 */
export async function wantScheduleSync(db: Queryable, r: RepoRef): Promise<void> {
  await db.query(
    `INSERT INTO schedule_repos (repo_id, installation_id, repo, wanted_at)
     VALUES ($1, $2, $3, now())
     ON CONFLICT (repo_id) DO UPDATE
       SET installation_id = excluded.installation_id, repo = excluded.repo, wanted_at = now()`,
    [r.repoId, r.installationId, r.repo],
  );
}

/**
 * Repositories the app is installed on, as GitHub lists them: any not known here yet is to be
 * read (installed before Tether read schedules, with no push since). A known one only takes its
 * current name and installation (renamed, transferred). Returns how many were new.
 */
export async function knowScheduleRepos(db: Queryable, listed: RepoRef[]): Promise<number> {
  // One row per repository: an upsert cannot touch a row twice.
  const repos = [...new Map(listed.map((r) => [r.repoId, r])).values()];
  if (repos.length === 0) return 0;
  const res = await db.query<{ added: boolean }>(
    `INSERT INTO schedule_repos (repo_id, installation_id, repo, wanted_at)
     SELECT id, inst, name, now() FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS u(id, inst, name)
     ON CONFLICT (repo_id) DO UPDATE
       SET installation_id = excluded.installation_id, repo = excluded.repo
       WHERE (schedule_repos.installation_id, schedule_repos.repo)
             IS DISTINCT FROM (excluded.installation_id, excluded.repo)
     RETURNING (xmax = 0) AS added`,
    [repos.map((r) => r.repoId), repos.map((r) => r.installationId), repos.map((r) => r.repo)],
  );
  return res.rows.filter((r) => r.added).length;
}

/** Repositories to read again: asked for since their last reading, or not read for `staleMs`. */
export async function reposToSync(
  db: Queryable,
  opts: { staleMs: number; limit: number },
): Promise<RepoRef[]> {
  const { rows } = await db.query<{ repo_id: string; installation_id: string; repo: string }>(
    `SELECT repo_id, installation_id, repo FROM schedule_repos
      WHERE synced_at IS NULL OR wanted_at > synced_at
         OR synced_at < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY coalesce(synced_at, '-infinity'), repo_id
      LIMIT $2`,
    [opts.staleMs, opts.limit],
  );
  return rows.map((r) => ({
    repoId: Number(r.repo_id),
    installationId: Number(r.installation_id),
    repo: r.repo,
  }));
}

/**
 * Make a repository's schedules what its config says, in one transaction: schedules no longer
 * in the file go (they stop), new ones start at their next tick, kept ones (same key) take the
 * new cron, request and place; their next tick is recomputed only when the cron or time zone
 * changed, and an issue a `title:` schedule opened is kept. Marks the repository read.
 * `readSince`: the reading began then; a push recorded after it asks for another.
 */
export async function replaceSchedules(
  pool: Pool,
  r: RepoRef,
  specs: ScheduleSpec[],
  readSince: Date,
): Promise<void> {
  await inTransaction(pool, async (tx) => {
    await tx.query(
      `DELETE FROM schedules WHERE repo_id = $1 AND NOT (schedule_key = ANY($2::text[]))`,
      [r.repoId, specs.map((s) => s.key)],
    );
    for (const s of specs)
      await tx.query(
        `INSERT INTO schedules (repo_id, installation_id, repo, schedule_key, position, cron,
                                timezone, agent, issue_number, title, request, next_run_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (repo_id, schedule_key) DO UPDATE SET
           installation_id = excluded.installation_id, repo = excluded.repo,
           position = excluded.position, request = excluded.request,
           issue_number = coalesce(schedules.issue_number, excluded.issue_number),
           next_run_at = CASE
             WHEN schedules.cron = excluded.cron AND schedules.timezone = excluded.timezone
             THEN schedules.next_run_at ELSE excluded.next_run_at END,
           cron = excluded.cron, timezone = excluded.timezone, updated_at = now()`,
        [
          r.repoId,
          r.installationId,
          r.repo,
          s.key,
          s.position,
          s.cron,
          s.timezone,
          s.agent,
          s.issueNumber,
          s.title,
          s.request,
          s.nextRunAt,
        ],
      );
    await markSynced(tx, r, readSince);
  });
}

/** The repository was read (its config is broken, or gone): keep its schedules as they are. */
export async function markSynced(db: Queryable, r: RepoRef, readSince: Date): Promise<void> {
  await db.query(
    `INSERT INTO schedule_repos (repo_id, installation_id, repo, wanted_at, synced_at)
     VALUES ($1, $2, $3, $4, $4)
     ON CONFLICT (repo_id) DO UPDATE SET synced_at = $4, repo = excluded.repo,
       installation_id = excluded.installation_id`,
    [r.repoId, r.installationId, r.repo, readSince],
  );
}

/** Schedules whose tick has come, oldest tick first. */
export async function dueSchedules(db: Queryable, now: Date, limit = 100): Promise<ScheduleRow[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${COLUMNS} FROM schedules WHERE next_run_at <= $1 ORDER BY next_run_at, id LIMIT $2`,
    [now, limit],
  );
  return rows.map(toSchedule);
}

/** Every schedule (the dashboard reads its own list: src/sql/stats/schedules.ts). */
export async function listSchedules(db: Queryable): Promise<ScheduleRow[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${COLUMNS} FROM schedules ORDER BY repo, position, id LIMIT 1000`,
  );
  return rows.map(toSchedule);
}

/** A `title:` schedule's first run opened its issue: keep using it (only the first one counts). */
export async function setScheduleIssue(
  db: Queryable,
  id: number,
  issueNumber: number,
): Promise<number> {
  const { rows } = await db.query<{ issue_number: number }>(
    `UPDATE schedules SET issue_number = coalesce(issue_number, $2), updated_at = now()
      WHERE id = $1 RETURNING issue_number`,
    [id, issueNumber],
  );
  return rows[0]?.issue_number ?? issueNumber;
}

/**
 * Take the tick `tick` of schedule `id`: move its next run to `next`, record the run (with the
 * task that runs it, when one was queued; an absorbed tick keeps the last run and task). False when
 * another process took it first or the schedule changed or went meanwhile.
 */
export async function claimTick(
  db: Queryable,
  o: { id: number; tick: Date; next: Date; ranAt: Date | null; taskId: number | null },
): Promise<boolean> {
  const res = await db.query(
    `UPDATE schedules SET next_run_at = $3, last_run_at = coalesce($4, last_run_at),
            last_task_id = coalesce($5, last_task_id), updated_at = now()
      WHERE id = $1 AND next_run_at = $2`,
    [o.id, o.tick, o.next, o.ranAt, o.taskId],
  );
  return (res.rowCount ?? 0) > 0;
}

/**
 * Run `fn` while holding the scheduler's session advisory lock on a connection of its own; when
 * another process holds it, nothing runs and the result is undefined.
 */
export async function withSchedulerLock<T>(
  pool: Pool,
  fn: (client: PoolClient) => Promise<T>,
): Promise<T | undefined> {
  const client = await pool.connect();
  try {
    const lock = await client.query<{ ok: boolean }>(
      `SELECT pg_try_advisory_lock(hashtext('tether:schedules')) AS ok`,
    );
    if (!lock.rows[0]?.ok) return undefined;
    try {
      return await fn(client);
    } finally {
      await client.query(`SELECT pg_advisory_unlock(hashtext('tether:schedules'))`);
    }
  } finally {
    client.release();
  }
}
