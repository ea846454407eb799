/** What /api/stats returns: the Stats shape and its parts, reason and outcome words, bounds. */
import { z } from "zod";
import type { ReviewFigures } from "./effects/reviews.js";
import { REASON_CODES } from "../../core/resume-decision.js";
import { OUTCOMES } from "../../core/task.js";
import type { StatsBucket, StatsRange } from "./window.js";
import type { CiLoopFigures } from "./effects/ci-loops.js";
import type { ScheduleStatRow } from "./schedules.js";

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

/** A runtime counts as alive while its heartbeat is younger than this. */
export const RUNNER_ALIVE_MS = 60_000;
/** How many rows the per-repository table and the latest-tasks list return at most. */
export const MAX_REPO_ROWS = 200;
export const LATEST_TASKS = 50;

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
  /** Queued tasks waiting for their installation's GitHub rate limit to reset (#34). */
  deferred: number;
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
   * The same figures per agent CLI (every registered one always present, src/cli-registry.ts).
   * A CLI that reports tokens only has its cost estimated by Tether from a price table.
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
  /** What became of the agents' changes in the window (docs/changes.md "Changes"). */
  changes: ChangesFigures;
  /**
   * Finished turns of tasks queued in the window, by what started them: comment, review, label,
   * assignment, ci (every one present, zeros included).
   */
  triggers: Record<string, number>;
  /**
   * CI loops started in the window (docs/how-a-turn-runs.md "Triggers beyond a mention"): by state (open, green,
   * stopped, limit; zeros included) and the automatic turns they queued.
   */
  ci: CiLoopFigures;
  /** Reviews agents posted on pull requests, of tasks queued in the window. */
  reviews: ReviewFigures;
  /**
   * Tool calls to the operator's MCP servers by server name, of tasks queued in the window (only
   * servers some turn was given; docs/operations.md "MCP servers").
   */
  mcpToolCalls: Record<string, number>;
  /**
   * GitHub requests per turn of tasks queued in the window, by kind: first, followUp (neither
   * publishing), publishing (published its changes); median and mean of tasks.github_requests.
   */
  githubRequests: Record<RequestTurnKind, TurnRequestFigures>;
  /**
   * Every schedule Tether learnt (docs/operations.md "Schedules"), whatever the range: its
   * repository, agent, issue, last run and next run, next due first.
   */
  schedules: ScheduleStatRow[];
}

/** Publishes of turns that finished in the window. */
export type { RequestTurnKind, TurnRequestFigures } from "./effects/github-requests.js";
import type { RequestTurnKind, TurnRequestFigures } from "./effects/github-requests.js";

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
