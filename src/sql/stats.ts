import { z } from "zod";
import type { Pool, PoolClient } from "../db/pool.js";
import { REASON_CODES } from "../core/resume-decision.js";
import { OUTCOMES } from "../core/task.js";

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

export { REASON_CODES, OUTCOMES };
export const ReasonCode = z.enum(REASON_CODES);
export type ReasonCode = z.infer<typeof ReasonCode>;

export const Outcome = z.enum(OUTCOMES);
export type Outcome = z.infer<typeof Outcome>;

/**
 * The outcome of a turn that reached the CLI but has none yet (still running, or lost
 * mid-run). The roll-up tables store this name (migration 1763800000600), as they store
 * UNKNOWN_REASON for a turn with a decision but no reason (should not happen; counted anyway).
 */
export const PENDING = "pending";
export const UNKNOWN_REASON = "unknown";

export const StatsRange = z.enum(["24h", "7d", "30d"]);
export type StatsRange = z.infer<typeof StatsRange>;
export type StatsBucket = "hour" | "day";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const RANGE_MS: Record<StatsRange, number> = {
  "24h": DAY_MS,
  "7d": 7 * DAY_MS,
  "30d": 30 * DAY_MS,
};
const BUCKET_MS: Record<StatsBucket, number> = { hour: HOUR_MS, day: DAY_MS };
/** The chart's grain for each range: 24 hourly points, 7 or 30 daily (UTC) points. */
export const BUCKET: Record<StatsRange, StatsBucket> = {
  "24h": "hour",
  "7d": "day",
  "30d": "day",
};

/** A runtime counts as alive while its heartbeat is younger than this. */
export const RUNNER_ALIVE_MS = 60_000;
/** How many rows the per-repository table and the latest-tasks list return at most. */
export const MAX_REPO_ROWS = 200;
export const LATEST_TASKS = 50;
export const DEFAULT_STATS_TIMEOUT_MS = 5_000;

export interface StatsWindow {
  range: StatsRange;
  bucket: StatsBucket;
  /** Start of the first bucket (inclusive). */
  from: Date;
  /** The moment the figures were taken (inclusive end). */
  to: Date;
  /** Start of each bucket, oldest first; the last one is the current, partial, bucket. */
  buckets: Date[];
}

/**
 * The window a range covers: whole UTC hours or days, the current partial one included, so the
 * chart's points line up with the clock (24 h = the current hour and the 23 before it).
 */
export function statsWindow(range: StatsRange, now: Date): StatsWindow {
  const b = BUCKET[range];
  const size = BUCKET_MS[b];
  const count = Math.max(1, Math.round(RANGE_MS[range] / size));
  const current = Math.floor(now.getTime() / size) * size;
  const buckets = Array.from(
    { length: count },
    (_, i) => new Date(current - (count - 1 - i) * size),
  );
  return { range, bucket: b, from: buckets[0] ?? new Date(current), to: now, buckets };
}

/** Averages over the turns of one kind that reported usage (a turn still running has none). */
export interface TurnCostProfile {
  turns: number;
  /** Turns that reported token usage; the token averages divide by this. */
  withUsage: number;
  avgInputTokens: number | null;
  avgOutputTokens: number | null;
  avgCacheReadTokens: number | null;
  avgCacheCreationTokens: number | null;
  /** Divides by the turns that reported a cost. */
  avgCostUsd: number | null;
  /** Divides by the turns that reported a duration. */
  avgDurationMs: number | null;
  totalCostUsd: number;
}

export interface SeriesPoint {
  start: string;
  turns: number;
  followUps: number;
  resumed: number;
  /** resumed ÷ followUps in this bucket; null when the bucket had no follow-up. */
  resumeRate: number | null;
  costUsd: number;
}

export interface RepoRow {
  repo: string;
  agent: string;
  turns: number;
  /** Tasks a spend limit kept from running (not turns). */
  refused: number;
  followUps: number;
  resumed: number;
  resumeRate: number | null;
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
}

export interface QueueFigures {
  /** Tasks waiting to run. */
  depth: number;
  oldestCreatedAt: string | null;
  /** Age of the oldest queued task, in seconds; null when the queue is empty. */
  oldestAgeSeconds: number | null;
  /** Tasks running now. */
  running: number;
  /** Runtimes whose heartbeat is younger than RUNNER_ALIVE_MS. */
  runnersAlive: number;
  /** Finished tasks whose final answer GitHub has not taken yet (the answer outbox). */
  answersPending: number;
}

export interface RunnerRow {
  id: string;
  hostname: string;
  cliVersion: string | null;
  canResume: boolean | null;
  startedAt: string;
  heartbeatAt: string;
  heartbeatAgeSeconds: number;
  alive: boolean;
  /** What the runner last reported about itself. */
  running: number;
  concurrency: number;
  /** Tasks in status running on this runtime, counted from the tasks table. */
  runningTasks: number;
  /** How its runner runs agents: "bwrap 0.8.0", "off" or "unavailable: …"; null if not reported. */
  sandbox: string | null;
}

export interface LatestTask {
  id: number;
  repo: string;
  issueNumber: number;
  agent: string;
  status: string;
  outcome: string | null;
  resumeDecision: "resume" | "fresh" | null;
  resumeReason: string | null;
  isFollowUp: boolean | null;
  sessionId: string | null;
  runtimeId: string | null;
  triggerAuthor: string;
  /** Link to the comment (or issue) that asked. */
  triggerUrl: string;
  /** Link to the answer comment, once there is one. */
  answerUrl: string | null;
  createdAt: string;
  finishedAt: string | null;
  durationMs: number | null;
  costUsd: number | null;
  inputTokens: number | null;
  cacheReadTokens: number | null;
}

export interface Stats {
  range: StatsRange;
  bucket: StatsBucket;
  from: string;
  to: string;
  totals: {
    turns: number;
    followUps: number;
    resumed: number;
    freshFollowUps: number;
    firstTurns: number;
    costUsd: number;
    inputTokens: number;
    outputTokens: number;
    cacheReadTokens: number;
    cacheCreationTokens: number;
    /** Tasks a spend limit kept from running (outcome limit_refused; not turns). */
    refused: number;
  };
  /** resumed ÷ followUps over the window; null when there was no follow-up turn. */
  resumeRate: number | null;
  /** Turns per reason code: every known code (zeros included), then any other code seen. */
  reasons: Record<string, number>;
  /**
   * Turns per outcome: every turn outcome (zeros included), "pending" for turns without one.
   * `limit_refused` is not among them: a refused task never ran (see totals.refused).
   */
  outcomes: Record<string, number>;
  /**
   * The same figures per agent CLI (`claude`, `codex`; both always present). Codex reports
   * tokens only, so its cost is Tether's estimate from a price table (src/codex/pricing.ts).
   */
  byCli: Record<string, CliFigures>;
  series: SeriesPoint[];
  savings: {
    resumed: TurnCostProfile;
    freshFollowUp: TurnCostProfile;
    freshFirst: TurnCostProfile;
    /** avgCostUsd of fresh follow-ups minus that of resumed turns; null without both. */
    costSavedPerResumedTurnUsd: number | null;
    /** avgInputTokens + avgCacheCreationTokens, fresh follow-up minus resumed. */
    uncachedTokensSavedPerResumedTurn: number | null;
  };
  /** Portable sessions over the window: how turns got their session (issue 16). */
  sessions: SessionMoves;
  repos: RepoRow[];
  /** How many (repository, agent) pairs had turns; repos holds the busiest MAX_REPO_ROWS. */
  reposTotal: number;
  queue: QueueFigures;
  runners: RunnerRow[];
  latest: LatestTask[];
  /** What became of the agents' changes in the window (README "Changes"). */
  changes: ChangesFigures;
}

/** Publishes of turns that finished in the window. */
export interface ChangesFigures {
  /** Turns whose changes were pushed. */
  published: number;
  /** Commits pushed (the turns' own and the merges with what others pushed meanwhile). */
  commitsPushed: number;
  /** Pull requests Tether opened. */
  pullRequestsOpened: number;
  /** Turns on fork pull requests answered with a patch. */
  patches: number;
  /** Turns that changed nothing. */
  unchanged: number;
  /** Publishes refused by a check, by reason (workflow, secret, too-large, …). */
  refused: Record<string, number>;
  /** Publishes that failed (GitHub refused, no permission, an error), by reason. */
  failed: Record<string, number>;
}

/** One CLI's share of the window. */
export interface CliFigures {
  turns: number;
  followUps: number;
  resumed: number;
  resumeRate: number | null;
  reasons: Record<string, number>;
  costUsd: number;
  /** The cost is an estimate priced by Tether, not the CLI's own figure. */
  costEstimated: boolean;
}

export const CLIS = ["claude", "codex"] as const;

export interface SessionMoves {
  /** Resumed turns whose session another runtime ran last. */
  resumedAcross: number;
  /** Resumed turns whose transcript came from Postgres (the runner had no current copy). */
  restoredFromStore: number;
  /** Resumed turns whose transcript came from the runner's own cache. */
  restoredFromCache: number;
  /** Median restore time from Postgres, ms; null without one. */
  storeRestoreMsP50: number | null;
  /** Turns whose session was compacted first. */
  compacted: number;
}

const NO_MOVES: SessionMoves = {
  resumedAcross: 0,
  restoredFromStore: 0,
  restoredFromCache: 0,
  storeRestoreMsP50: null,
  compacted: 0,
};

async function sessionMoves(c: PoolClient, w: StatsWindow): Promise<SessionMoves> {
  const { rows } = await c.query(
    `SELECT count(*) FILTER (WHERE resumed_across)::int AS across,
            count(*) FILTER (WHERE session_restore = 'store')::int AS store,
            count(*) FILTER (WHERE session_restore = 'cache')::int AS cache,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY restore_ms)
              FILTER (WHERE session_restore = 'store') AS p50,
            count(*) FILTER (WHERE compacted)::int AS compacted
       FROM tasks WHERE created_at >= $1 AND created_at < $2`,
    [w.from, w.to],
  );
  const r = rows[0] as Record<string, unknown>;
  return {
    resumedAcross: r.across as number,
    restoredFromStore: r.store as number,
    restoredFromCache: r.cache as number,
    storeRestoreMsP50: r.p50 === null ? null : Number(r.p50),
    compacted: r.compacted as number,
  };
}

export class StatsTimeoutError extends Error {
  constructor(
    readonly timeoutMs: number,
    cause: unknown,
  ) {
    super(
      `The dashboard's statistics query over the tasks table ran longer than ${timeoutMs} ms and was cancelled; ` +
        "check the database's load, and that the roll-up tables of migration 1763800000600_turn-stats-rollups exist",
      { cause },
    );
    this.name = "StatsTimeoutError";
  }
}

export interface ReadStatsOptions {
  range: StatsRange;
  now: Date;
  timeoutMs?: number;
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
    return assemble(window, { hours, repos, queue, runners, latest, changes, refused, sessions });
  });
}

/** Queue depth, oldest queued age, running tasks and live runners: what the /metrics gauges show. */
export async function readQueueFigures(
  pool: Pool,
  opts: { now: Date; timeoutMs: number },
): Promise<QueueFigures> {
  return inSnapshot(pool, opts.timeoutMs, (c) => queueFigures(c, opts.now));
}

async function inSnapshot<T>(
  pool: Pool,
  timeoutMs: number,
  fn: (c: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    // SET LOCAL takes no bind parameters; the value is an integer we produced.
    await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    if ((err as { code?: string }).code === "57014") throw new StatsTimeoutError(timeoutMs, err);
    throw err;
  } finally {
    client.release(broken);
  }
}

/** Publishes by result and reason, of turns that finished in the window (tasks_publish index). */
export interface ChangeRow {
  result: string;
  reason: string | null;
  turns: number;
  commits: number;
  pulls: number;
}

async function changeRows(c: PoolClient, w: StatsWindow): Promise<ChangeRow[]> {
  const { rows } = await c.query<ChangeRow>(
    `SELECT publish_result AS result, publish_reason AS reason, count(*)::int AS turns,
            COALESCE(sum(commits_pushed), 0)::int AS commits, count(pull_opened)::int AS pulls
       FROM tasks
      WHERE publish_result IS NOT NULL AND finished_at >= $1 AND finished_at <= $2
      GROUP BY 1, 2`,
    [w.from, w.to],
  );
  return rows;
}

export function changesFigures(rows: readonly ChangeRow[]): ChangesFigures {
  const out: ChangesFigures = {
    published: 0,
    commitsPushed: 0,
    pullRequestsOpened: 0,
    patches: 0,
    unchanged: 0,
    refused: {},
    failed: {},
  };
  for (const r of rows) {
    out.commitsPushed += r.commits;
    out.pullRequestsOpened += r.pulls;
    if (r.result === "published") out.published += r.turns;
    else if (r.result === "patch") out.patches += r.turns;
    else if (r.result === "unchanged") out.unchanged += r.turns;
    else if (r.result === "refused" || r.result === "failed") {
      const bag = out[r.result];
      const why = r.reason ?? UNKNOWN_REASON;
      bag[why] = (bag[why] ?? 0) + r.turns;
    }
  }
  return out;
}

/** Turn sums for one bucket and one (follow-up, resumed, reason, outcome) combination. */
export interface HourRow {
  bucket: number;
  /** The agent CLI; absent counts as claude. */
  cli?: string;
  follow_up: boolean;
  resumed: boolean;
  reason: string;
  outcome: string;
  turns: number;
  with_usage: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  with_cost: number;
  cost_usd: number;
  with_duration: number;
  duration_ms: number;
}

/** Turn sums for one (repository, agent). */
export interface RepoAggRow {
  repo: string;
  agent: string;
  turns: number;
  follow_ups: number;
  resumed: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  cost_usd: number;
}

/**
 * The window's turns by chart bucket and by every dimension the page breaks them down by, from
 * the hourly roll-up: at most (hours in the window) × (a few dozen combinations) rows.
 */
export function hourRowsQuery(w: StatsWindow): { text: string; values: unknown[] } {
  return {
    text: `SELECT floor((extract(epoch FROM hour) - $3) / $4)::int AS bucket,
                  cli, follow_up, resumed, reason, outcome,
                  sum(turns) AS turns, sum(with_usage) AS with_usage,
                  sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
                  sum(cache_read_tokens) AS cache_read_tokens,
                  sum(cache_creation_tokens) AS cache_creation_tokens,
                  sum(with_cost) AS with_cost, sum(cost_usd) AS cost_usd,
                  sum(with_duration) AS with_duration, sum(duration_ms) AS duration_ms
             FROM turn_stats_hourly
            WHERE hour >= $1 AND hour <= $2
            GROUP BY 1, cli, follow_up, resumed, reason, outcome
           HAVING sum(turns) <> 0`,
    values: [w.from, w.to, w.from.getTime() / 1000, BUCKET_MS[w.bucket] / 1000],
  };
}

/**
 * Per (repository, agent): whole UTC days from the daily roll-up for the 7 and 30 day ranges;
 * the 24 h range starts mid-day, so it reads that day of tasks directly.
 */
export function repoRowsQuery(w: StatsWindow): { text: string; values: unknown[] } {
  if (w.bucket === "day") {
    return {
      text: `SELECT repo, agent, sum(turns) AS turns, sum(follow_ups) AS follow_ups,
                    sum(resumed) AS resumed, sum(input_tokens) AS input_tokens,
                    sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
                    sum(cache_creation_tokens) AS cache_creation_tokens, sum(cost_usd) AS cost_usd
               FROM turn_stats_daily_repo
              WHERE day >= $1 AND day <= $2
              GROUP BY repo, agent
             HAVING sum(turns) <> 0`,
      values: [w.from, w.to],
    };
  }
  return {
    text: `SELECT repo, agent, count(*) AS turns,
                  count(*) FILTER (WHERE coalesce(is_follow_up, false) OR resumed) AS follow_ups,
                  count(*) FILTER (WHERE resumed) AS resumed,
                  coalesce(sum(input_tokens), 0) AS input_tokens,
                  coalesce(sum(output_tokens), 0) AS output_tokens,
                  coalesce(sum(cache_read_tokens), 0) AS cache_read_tokens,
                  coalesce(sum(cache_creation_tokens), 0) AS cache_creation_tokens,
                  coalesce(sum(cost_usd), 0) AS cost_usd
             FROM (SELECT repo, agent, is_follow_up, input_tokens, output_tokens,
                          cache_read_tokens, cache_creation_tokens, cost_usd,
                          resume_decision = 'resume'
                            AND resume_reason IS NOT DISTINCT FROM 'resumed' AS resumed
                     FROM tasks
                    WHERE resume_decision IS NOT NULL
                      AND created_at >= $1 AND created_at <= $2) t
            GROUP BY repo, agent`,
    values: [w.from, w.to],
  };
}

/** Tasks a spend limit refused, per (repository, agent), in the window (by their created_at). */
export interface RefusedRow {
  repo: string;
  agent: string;
  refused: number;
}

/** Refusals are not turns, so not in the roll-ups: read from tasks by the limit_refused index. */
export function refusedRowsQuery(w: StatsWindow): { text: string; values: unknown[] } {
  return {
    text: `SELECT repo, agent, count(*) AS refused FROM tasks
            WHERE outcome = 'limit_refused' AND created_at >= $1 AND created_at <= $2
            GROUP BY repo, agent`,
    values: [w.from, w.to],
  };
}

async function refusedRows(c: PoolClient, w: StatsWindow): Promise<RefusedRow[]> {
  return (await c.query<RefusedRow>(refusedRowsQuery(w))).rows;
}

async function hourRows(c: PoolClient, w: StatsWindow): Promise<HourRow[]> {
  return (await c.query<HourRow>(hourRowsQuery(w))).rows;
}

async function repoRows(c: PoolClient, w: StatsWindow): Promise<RepoAggRow[]> {
  return (await c.query<RepoAggRow>(repoRowsQuery(w))).rows;
}

async function queueFigures(c: PoolClient, now: Date): Promise<QueueFigures> {
  // Scalar subqueries so each one uses its own partial index (tasks_queue,
  // tasks_running_lease, tasks_answer_due); the runtimes table is small.
  const { rows } = await c.query<{
    depth: number;
    oldest: Date | null;
    running: number;
    runners_alive: number;
    answers_pending: number;
  }>(
    `SELECT (SELECT count(*) FROM tasks WHERE status = 'queued') AS depth,
            (SELECT min(created_at) FROM tasks WHERE status = 'queued') AS oldest,
            (SELECT count(*) FROM tasks WHERE status = 'running') AS running,
            (SELECT count(*) FROM runtimes WHERE heartbeat_at > $1) AS runners_alive,
            (SELECT count(*) FROM tasks WHERE answer_pending) AS answers_pending`,
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
  };
}

async function runnerRows(c: PoolClient, now: Date): Promise<RunnerRow[]> {
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

async function latestTasks(c: PoolClient, limit: number): Promise<LatestTask[]> {
  const { rows } = await c.query<{
    id: number;
    repo: string;
    issue_number: number;
    agent: string;
    status: string;
    outcome: string | null;
    resume_decision: "resume" | "fresh" | null;
    resume_reason: string | null;
    is_follow_up: boolean | null;
    session_id: string | null;
    runtime_id: string | null;
    trigger_author: string;
    trigger_url: string;
    answer_comment_id: number | null;
    created_at: Date;
    finished_at: Date | null;
    duration_ms: number | null;
    cost_usd: number | null;
    input_tokens: number | null;
    cache_read_tokens: number | null;
  }>(
    `SELECT id, repo, issue_number, agent, status, outcome, resume_decision, resume_reason,
            is_follow_up, session_id, runtime_id, trigger_author, trigger_url, answer_comment_id,
            created_at, finished_at, duration_ms, cost_usd, input_tokens, cache_read_tokens
       FROM tasks ORDER BY id DESC LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({
    id: r.id,
    repo: r.repo,
    issueNumber: r.issue_number,
    agent: r.agent,
    status: r.status,
    outcome: r.outcome,
    resumeDecision: r.resume_decision,
    resumeReason: r.resume_reason,
    isFollowUp: r.is_follow_up,
    sessionId: r.session_id,
    runtimeId: r.runtime_id,
    triggerAuthor: r.trigger_author,
    triggerUrl: r.trigger_url,
    answerUrl: answerUrl(r.trigger_url, r.answer_comment_id),
    createdAt: r.created_at.toISOString(),
    finishedAt: r.finished_at ? r.finished_at.toISOString() : null,
    durationMs: r.duration_ms,
    costUsd: r.cost_usd,
    inputTokens: r.input_tokens,
    cacheReadTokens: r.cache_read_tokens,
  }));
}

/** The answer sits in the same thread as the trigger: same page, another comment anchor. */
export function answerUrl(triggerUrl: string, answerCommentId: number | null): string | null {
  if (answerCommentId === null) return null;
  const page = triggerUrl.split("#")[0];
  return page ? `${page}#issuecomment-${answerCommentId}` : null;
}

/** Sums of one class of turns, before averaging. */
interface Acc {
  turns: number;
  followUps: number;
  resumed: number;
  withUsage: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheCreation: number;
  withCost: number;
  cost: number;
  withDuration: number;
  duration: number;
}

const emptyAcc = (): Acc => ({
  turns: 0,
  followUps: 0,
  resumed: 0,
  withUsage: 0,
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheCreation: 0,
  withCost: 0,
  cost: 0,
  withDuration: 0,
  duration: 0,
});

function add(acc: Acc, r: HourRow): void {
  acc.turns += r.turns;
  if (r.follow_up) acc.followUps += r.turns;
  if (r.resumed) acc.resumed += r.turns;
  acc.withUsage += r.with_usage;
  acc.input += r.input_tokens;
  acc.output += r.output_tokens;
  acc.cacheRead += r.cache_read_tokens;
  acc.cacheCreation += r.cache_creation_tokens;
  acc.withCost += r.with_cost;
  acc.cost += r.cost_usd;
  acc.withDuration += r.with_duration;
  acc.duration += r.duration_ms;
}

const ratio = (num: number, den: number): number | null => (den > 0 ? num / den : null);
const usd = (v: number): number => Math.round(v * 1e6) / 1e6;
const avg = (sum: number, n: number): number | null => (n > 0 ? sum / n : null);
const avgUsd = (sum: number, n: number): number | null => (n > 0 ? usd(sum / n) : null);

function profile(a: Acc): TurnCostProfile {
  return {
    turns: a.turns,
    withUsage: a.withUsage,
    avgInputTokens: avg(a.input, a.withUsage),
    avgOutputTokens: avg(a.output, a.withUsage),
    avgCacheReadTokens: avg(a.cacheRead, a.withUsage),
    avgCacheCreationTokens: avg(a.cacheCreation, a.withUsage),
    avgCostUsd: avgUsd(a.cost, a.withCost),
    avgDurationMs: avg(a.duration, a.withDuration),
    totalCostUsd: usd(a.cost),
  };
}

const diff = (a: number | null, b: number | null): number | null =>
  a === null || b === null ? null : a - b;

export interface StatsParts {
  hours: HourRow[];
  repos: RepoAggRow[];
  queue: QueueFigures;
  runners: RunnerRow[];
  latest: LatestTask[];
  /** Publishes by result and reason; absent reads as none. */
  changes?: ChangeRow[];
  /** Absent: no refusals (older callers). */
  refused?: RefusedRow[];
  sessions?: SessionMoves;
}

/** Outcomes a turn can have: every outcome but limit_refused, which a task gets without running. */
export const TURN_OUTCOMES = OUTCOMES.filter((o) => o !== "limit_refused");

/** Rolls the aggregate rows up into the API's shape. Pure, so it is tested on its own too. */
export function assemble(w: StatsWindow, parts: StatsParts): Stats {
  const total = emptyAcc();
  const classes = { resumed: emptyAcc(), freshFollowUp: emptyAcc(), freshFirst: emptyAcc() };
  const perBucket = w.buckets.map(() => emptyAcc());
  const reasons: Record<string, number> = Object.fromEntries(REASON_CODES.map((c) => [c, 0]));
  const outcomes: Record<string, number> = Object.fromEntries(
    [...TURN_OUTCOMES, PENDING].map((c) => [c, 0]),
  );
  const perCli = new Map<string, { acc: Acc; reasons: Record<string, number> }>();
  const cliOf = (cli: string) => {
    let c = perCli.get(cli);
    if (!c) {
      c = { acc: emptyAcc(), reasons: Object.fromEntries(REASON_CODES.map((r) => [r, 0])) };
      perCli.set(cli, c);
    }
    return c;
  };
  for (const cli of CLIS) cliOf(cli);
  for (const g of parts.hours) {
    add(total, g);
    const c = cliOf(g.cli ?? "claude");
    add(c.acc, g);
    c.reasons[g.reason] = (c.reasons[g.reason] ?? 0) + g.turns;
    add(g.resumed ? classes.resumed : g.follow_up ? classes.freshFollowUp : classes.freshFirst, g);
    const bucket = perBucket[g.bucket];
    if (bucket) add(bucket, g);
    reasons[g.reason] = (reasons[g.reason] ?? 0) + g.turns;
    outcomes[g.outcome] = (outcomes[g.outcome] ?? 0) + g.turns;
  }
  const refusedBy = new Map<string, number>();
  const pairKey = (repo: string, agent: string) => JSON.stringify([repo, agent]);
  for (const r of parts.refused ?? []) refusedBy.set(pairKey(r.repo, r.agent), r.refused);
  const repoRows: RepoRow[] = parts.repos.map((g) => ({
    repo: g.repo,
    agent: g.agent,
    turns: g.turns,
    refused: refusedBy.get(pairKey(g.repo, g.agent)) ?? 0,
    followUps: g.follow_ups,
    resumed: g.resumed,
    resumeRate: ratio(g.resumed, g.follow_ups),
    costUsd: usd(g.cost_usd),
    inputTokens: g.input_tokens,
    outputTokens: g.output_tokens,
    cacheReadTokens: g.cache_read_tokens,
    cacheCreationTokens: g.cache_creation_tokens,
  }));

  // A pair whose every task was refused had no turn, but belongs in the table all the same.
  const seen = new Set(repoRows.map((r) => pairKey(r.repo, r.agent)));
  for (const r of parts.refused ?? [])
    if (!seen.has(pairKey(r.repo, r.agent)))
      repoRows.push({
        repo: r.repo,
        agent: r.agent,
        turns: 0,
        refused: r.refused,
        followUps: 0,
        resumed: 0,
        resumeRate: null,
        costUsd: 0,
        inputTokens: 0,
        outputTokens: 0,
        cacheReadTokens: 0,
        cacheCreationTokens: 0,
      });
  repoRows.sort(
    (a, b) =>
      b.turns - a.turns ||
      b.refused - a.refused ||
      a.repo.localeCompare(b.repo) ||
      a.agent.localeCompare(b.agent),
  );
  const savings = {
    resumed: profile(classes.resumed),
    freshFollowUp: profile(classes.freshFollowUp),
    freshFirst: profile(classes.freshFirst),
  };
  const uncached = (p: TurnCostProfile) =>
    p.avgInputTokens === null ? null : p.avgInputTokens + (p.avgCacheCreationTokens ?? 0);
  const costSaved = diff(savings.freshFollowUp.avgCostUsd, savings.resumed.avgCostUsd);
  return {
    range: w.range,
    bucket: w.bucket,
    from: w.from.toISOString(),
    to: w.to.toISOString(),
    totals: {
      turns: total.turns,
      followUps: total.followUps,
      resumed: total.resumed,
      freshFollowUps: total.followUps - total.resumed,
      firstTurns: total.turns - total.followUps,
      costUsd: usd(total.cost),
      inputTokens: total.input,
      outputTokens: total.output,
      cacheReadTokens: total.cacheRead,
      cacheCreationTokens: total.cacheCreation,
      refused: (parts.refused ?? []).reduce((n, r) => n + r.refused, 0),
    },
    resumeRate: ratio(total.resumed, total.followUps),
    reasons,
    outcomes,
    byCli: Object.fromEntries(
      [...perCli].map(([cli, c]) => [
        cli,
        {
          turns: c.acc.turns,
          followUps: c.acc.followUps,
          resumed: c.acc.resumed,
          resumeRate: ratio(c.acc.resumed, c.acc.followUps),
          reasons: c.reasons,
          costUsd: usd(c.acc.cost),
          costEstimated: cli !== "claude",
        },
      ]),
    ),
    series: w.buckets.map((start, i) => {
      const b = perBucket[i] ?? emptyAcc();
      return {
        start: start.toISOString(),
        turns: b.turns,
        followUps: b.followUps,
        resumed: b.resumed,
        resumeRate: ratio(b.resumed, b.followUps),
        costUsd: usd(b.cost),
      };
    }),
    savings: {
      ...savings,
      costSavedPerResumedTurnUsd: costSaved === null ? null : usd(costSaved),
      uncachedTokensSavedPerResumedTurn: diff(
        uncached(savings.freshFollowUp),
        uncached(savings.resumed),
      ),
    },
    sessions: parts.sessions ?? NO_MOVES,
    repos: repoRows.slice(0, MAX_REPO_ROWS),
    reposTotal: repoRows.length,
    queue: parts.queue,
    runners: parts.runners,
    latest: parts.latest,
    changes: changesFigures(parts.changes ?? []),
  };
}
