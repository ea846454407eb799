/** Rolls the rows of every section up into the Stats shape: sums, averages, rates, savings. */
import { REASON_CODES } from "../../core/resume-decision.js";
import { OUTCOMES } from "../../core/task.js";
import { changesFigures, type ChangeRow } from "./turns/changes.js";
import {
  MAX_REPO_ROWS,
  PENDING,
  type LatestTask,
  type QueueFigures,
  type RepoRow,
  type RunnerRow,
  type SessionMoves,
  type Stats,
  type TurnCostProfile,
} from "./figures.js";
import type { RefusedRow, RepoAggRow } from "./turns/repos.js";
import { NO_MOVES } from "./turns/sessions.js";
import { triggerFigures, type TriggerRow } from "./turns/triggers.js";
import { ciLoopFigures, type CiLoopRow } from "./effects/ci-loops.js";
import type { ReviewFigures } from "./effects/reviews.js";
import { githubRequestFigures, type GithubRequestRow } from "./effects/github-requests.js";
import type { ScheduleStatRow } from "./schedules.js";
import type { HourRow } from "./turns/by-hour.js";
import type { StatsWindow } from "./window.js";

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
  /** Turns by trigger; absent reads as none. */
  triggers?: TriggerRow[];
  /** CI loops by state; absent reads as none. */
  ciLoops?: CiLoopRow[];
  reviews?: ReviewFigures;
  /** MCP tool calls by server; absent reads as none. */
  mcpToolCalls?: Record<string, number>;
  /** GitHub requests per turn by kind; absent reads as none. */
  githubRequests?: GithubRequestRow[];
  /** Every schedule; absent reads as none. */
  schedules?: ScheduleStatRow[];
}

/** Outcomes a turn can have: every outcome but limit_refused, which a task gets without running. */
export const TURN_OUTCOMES = OUTCOMES.filter((o) => o !== "limit_refused");

/** The registered CLIs, as data: the query layer sits below them (src/cli-registry.ts hands this). */
export interface StatsClis {
  /** Every registered CLI: each has its figures, even at zero. */
  names: readonly string[];
  /** What a row without a CLI counts as. */
  defaultCli: string;
  /** Whether that CLI's cost is Tether's estimate (an unknown one: yes). */
  costEstimated(cli: string): boolean;
}

/** Rolls the aggregate rows up into the API's shape. Pure, so it is tested on its own too. */
export function assemble(w: StatsWindow, parts: StatsParts, clis: StatsClis): Stats {
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
  for (const cli of clis.names) cliOf(cli);
  for (const g of parts.hours) {
    add(total, g);
    const c = cliOf(g.cli ?? clis.defaultCli);
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
          costEstimated: clis.costEstimated(cli),
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
    triggers: triggerFigures(parts.triggers ?? []),
    ci: ciLoopFigures(parts.ciLoops ?? []),
    reviews: parts.reviews ?? { posted: 0, failed: 0, lineComments: 0 },
    mcpToolCalls: parts.mcpToolCalls ?? {},
    githubRequests: githubRequestFigures(parts.githubRequests ?? []),
    schedules: parts.schedules ?? [],
  };
}
