/**
 * What the dashboard's script (dashboard.js) reads of GET /api/stats: the fields it uses, as the
 * server sends them. The server's own type is `Stats` (src/sql/stats/figures.ts);
 * dashboard-routes.ts checks that it satisfies this one, so a field renamed or retyped there fails
 * `npm run typecheck` here instead of blanking a panel. Types only, no imports: both the Node program and
 * the browser program (tsconfig.json in this folder) read this file.
 */

export interface DashboardStats {
  range: string;
  bucket: "hour" | "day";
  totals: {
    turns: number;
    followUps: number;
    resumed: number;
    freshFollowUps: number;
    firstTurns: number;
    costUsd: number;
    refused: number;
  };
  resumeRate: number | null;
  reasons: Record<string, number>;
  outcomes: Record<string, number>;
  byCli: Record<string, DashboardCli>;
  series: DashboardPoint[];
  savings: {
    resumed: DashboardCostProfile;
    freshFollowUp: DashboardCostProfile;
    freshFirst: DashboardCostProfile;
    costSavedPerResumedTurnUsd: number | null;
    uncachedTokensSavedPerResumedTurn: number | null;
  };
  sessions: {
    resumedAcross: number;
    restoredFromStore: number;
    restoredFromCache: number;
    storeRestoreMsP50: number | null;
    compacted: number;
  };
  repos: DashboardRepo[];
  reposTotal: number;
  queue: {
    depth: number;
    oldestAgeSeconds: number | null;
    running: number;
    runnersAlive: number;
    answersPending: number;
    deferred?: number;
  };
  runners: DashboardRunner[];
  latest: DashboardTask[];
  changes: {
    published: number;
    commitsPushed: number;
    pullRequestsOpened: number;
    patches: number;
    refused: Record<string, number>;
    failed: Record<string, number>;
  };
  /** Finished turns by what started them: comment, review, label, assignment, ci. */
  triggers?: Record<string, number>;
  /** CI loops started in the range, by state (open, green, stopped, limit), and their turns. */
  ci?: { loops: Record<string, number>; turns: number };
  reviews?: { posted: number; failed: number; lineComments: number };
  /** Tool calls to the operator's MCP servers, by server (only servers some turn was given). */
  mcpToolCalls?: Record<string, number>;
  /** GitHub requests per turn by kind (first, followUp, publishing): median and mean. */
  githubRequests?: Record<
    string,
    {
      turns: number;
      median: number | null;
      mean: number | null;
      notModifiedMedian?: number | null;
    }
  >;
  /** Every schedule, next due first (whatever the range). */
  schedules?: DashboardSchedule[];
  /**
   * Per installation: the x-ratelimit-remaining GitHub last reported (stored by every process, or
   * this process's own), when the window resets (epoch seconds), and how many queued tasks wait
   * for that reset (TETHER_RATE_LIMIT_RESERVE).
   */
  githubHeadroom?: Record<
    string,
    { remaining: number; limit: number | null; resetAt?: number | null; deferred?: number }
  >;
}

export interface DashboardCostProfile {
  turns: number;
  avgInputTokens: number | null;
  avgOutputTokens: number | null;
  avgCacheReadTokens: number | null;
  avgCacheCreationTokens: number | null;
  avgCostUsd: number | null;
  avgDurationMs: number | null;
}

export interface DashboardPoint {
  start: string;
  turns: number;
  followUps: number;
  resumed: number;
  resumeRate: number | null;
  costUsd: number;
}

export interface DashboardCli {
  turns: number;
  followUps: number;
  resumed: number;
  resumeRate: number | null;
  reasons: Record<string, number>;
  costUsd: number;
  costEstimated: boolean;
}

export interface DashboardRepo {
  repo: string;
  agent: string;
  turns: number;
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

export interface DashboardRunner {
  id: string;
  hostname: string;
  cliVersion: string | null;
  canResume: boolean | null;
  heartbeatAt: string;
  alive: boolean;
  concurrency: number;
  runningTasks: number;
  sandbox: string | null;
}

export interface DashboardTask {
  id: number;
  repo: string;
  issueNumber: number;
  agent: string;
  status: string;
  outcome: string | null;
  resumeDecision: "resume" | "fresh" | null;
  resumeReason: string | null;
  sessionId: string | null;
  triggerAuthor: string;
  triggerUrl: string;
  answerUrl: string | null;
  createdAt: string;
  durationMs: number | null;
  costUsd: number | null;
}

export interface DashboardSchedule {
  repo: string;
  agent: string;
  issueNumber: number | null;
  title: string | null;
  cron: string;
  timezone: string;
  lastRunAt: string | null;
  lastTask: { id: number; status: string; outcome: string | null; url: string } | null;
  nextRunAt: string;
}
