import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Pool } from "./db/pool.js";
import {
  OUTCOMES,
  REASON_CODES,
  type Outcome,
  type QueueFigures,
  type ReasonCode,
} from "./sql/stats/figures.js";
import { readQueueFigures } from "./sql/stats/read.js";
import { LIMIT_KINDS } from "./spend/spend-limits.js";
import { TRIGGERS } from "./core/task.js";
import { CLI_NAMES, DEFAULT_CLI } from "./cli-registry.js";
import { requestTally, tallyRows } from "./github/request-count.js";

/** What the runner reports once per finished turn. */
export interface TurnRecord {
  outcome: Outcome;
  /** The agent CLI the turn ran on; default: the registry's default CLI. */
  cli?: string;
  /** What started the turn (core/task.ts TRIGGERS); default comment. */
  trigger?: string;
  /** The turn's resume reason code; null when the decision never ran. */
  reason: ReasonCode | null;
  /** Wall time of the CLI run. */
  durationMs?: number | null;
  /** From the task's creation to the claim that started it. */
  queueWaitMs?: number | null;
  /** What the CLI's result line reported; absent when the run ended without one. */
  usage?: {
    inputTokens?: number | null;
    outputTokens?: number | null;
    cacheReadTokens?: number | null;
    cacheCreationTokens?: number | null;
    costUsd?: number | null;
  } | null;
  /** What became of the turn's changes; absent when publishing did not run. */
  publish?: { result: string; reason: string | null; commits: number; pullOpened: boolean } | null;
  /** Tool calls to each MCP server the agent was given (#39); absent or null: none given. */
  mcpToolCalls?: Record<string, number> | null;
}

/** Results of publishing a turn's changes (tether_publish_total's `result` label). */
export const PUBLISH_RESULTS = ["published", "unchanged", "refused", "failed", "patch"] as const;
/** Its `reason` label: why a publish was refused or failed ("none" otherwise). */
export const PUBLISH_REASONS = [
  "none",
  "default-branch",
  "protected-branch",
  "bad-branch",
  "workflow",
  "protected-path",
  "too-many-files",
  "too-large",
  "secret",
  "not-tethers-commit",
  "conflict",
  "workspace",
  "push-refused",
  "signatures-required",
  "permission",
  "workflows-permission",
  "error",
] as const;

/** Why the webhook route refused a request before taking it (tether_webhook_refused_total). */
export const WEBHOOK_REFUSALS = [
  "bad_request",
  "too_large",
  "busy",
  "timeout",
  "bad_signature",
] as const;
export type WebhookRefusal = (typeof WEBHOOK_REFUSALS)[number];

/** What became of a redelivery asked of GitHub (tether_webhook_redeliveries_total). */
export const REDELIVERY_RESULTS = ["requested", "failed"] as const;
export type RedeliveryResult = (typeof REDELIVERY_RESULTS)[number];

export interface MetricsOptions {
  /** Node's process_* and nodejs_* metrics (on for the process, off in tests by default). */
  defaultMetrics?: boolean;
  /** Statement timeout of the scrape-time gauge query; a scrape never waits much longer. */
  gaugeTimeoutMs?: number;
  now?: () => Date;
}

export const DEFAULT_GAUGE_TIMEOUT_MS = 1_000;
const OTHER = "other";
const known = <T extends string>(list: readonly T[], v: unknown): T | typeof OTHER =>
  list.includes(v as T) ? (v as T) : OTHER;
const nonNegative = (v: number | null | undefined): v is number =>
  typeof v === "number" && Number.isFinite(v) && v >= 0;

/**
 * Tether's Prometheus metrics, on a registry of their own (tests make as many as they like).
 * Counters and histograms are this process's own; the queue gauges are read from Postgres
 * when Prometheus scrapes, so every web process reports the same, current figures.
 * Metric names and labels are listed in docs/operations.md ("Dashboard, stats API and metrics").
 */
export class Metrics {
  readonly registry = new Registry();
  private pool: Pool | undefined;
  private inflight: Promise<QueueFigures | undefined> | undefined;
  private readonly gaugeTimeoutMs: number;
  private readonly now: () => Date;

  private readonly turns = new Counter({
    name: "tether_turns_total",
    help: `Finished turns by outcome, resume reason code and agent CLI (${CLI_NAMES.join(", ")}).`,
    labelNames: ["outcome", "reason", "cli"] as const,
    registers: [this.registry],
  });
  private readonly triggers = new Counter({
    name: "tether_turn_triggers_total",
    help: "Finished turns by what started them: comment, review, label, assignment, ci.",
    labelNames: ["trigger"] as const,
    registers: [this.registry],
  });
  private readonly tokens = new Counter({
    name: "tether_turn_tokens_total",
    help: "Tokens the CLI reported, by kind (input, output, cache_read, cache_creation) and whether the turn resumed.",
    labelNames: ["kind", "resumed"] as const,
    registers: [this.registry],
  });
  private readonly cost = new Counter({
    name: "tether_turn_cost_usd_total",
    help: "Cost in US dollars, by whether the turn resumed and agent CLI: as the CLI reported it, or estimated from its tokens and a price table for a CLI that reports none.",
    labelNames: ["resumed", "cli"] as const,
    registers: [this.registry],
  });
  private readonly mcpCalls = new Counter({
    name: "tether_mcp_tool_calls_total",
    help: "Tool calls agents made to the operator's MCP servers (TETHER_MCP_SERVERS), by server.",
    labelNames: ["server"] as const,
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: "tether_turn_duration_seconds",
    help: "Wall time of a turn's CLI run, by outcome.",
    labelNames: ["outcome"] as const,
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600],
    registers: [this.registry],
  });
  private readonly queueWait = new Histogram({
    name: "tether_queue_wait_seconds",
    help: "Time a task waited in the queue before a runner claimed it.",
    buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800],
    registers: [this.registry],
  });
  private readonly webhookRefused = new Counter({
    name: "tether_webhook_refused_total",
    help: "Requests to the webhook route refused before their payload was parsed, by reason: bad_request (GitHub's headers missing), too_large, busy (too many unverified bodies in flight), timeout (the body came too slowly), bad_signature.",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  private readonly refused = new Counter({
    name: "tether_turns_refused_total",
    help: "Tasks a spend limit kept from running, by the limit reached: conversation, repository_month, installation_month (a task that reached several counts once for each).",
    labelNames: ["limit"] as const,
    registers: [this.registry],
  });
  private readonly deliveriesPruned = new Counter({
    name: "tether_deliveries_pruned_total",
    help: "Finished webhook deliveries deleted from the inbox (webhook_deliveries) after the retention window.",
    registers: [this.registry],
  });
  private readonly scheduleTicks = new Counter({
    name: "tether_schedule_ticks_total",
    help: "Schedule ticks by what they did: queued (a turn), absorbed (the previous one still waits or runs), skipped (the config or the issue is gone).",
    labelNames: ["result"],
    registers: [this.registry],
  });
  private readonly redeliveries = new Counter({
    name: "tether_webhook_redeliveries_total",
    help: "Webhook deliveries that failed and that this process asked GitHub to redeliver, by result: requested (GitHub took the request), failed (GitHub refused it or could not be reached; the next sweep tries again).",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });
  private readonly publishes = new Counter({
    name: "tether_publish_total",
    help: "Turns whose changes Tether tried to publish, by result (published, unchanged, refused, failed, patch) and reason (why it was refused or failed; none otherwise).",
    labelNames: ["result", "reason"] as const,
    registers: [this.registry],
  });
  private readonly commitsPushed = new Counter({
    name: "tether_commits_pushed_total",
    help: "Commits Tether pushed to conversation branches and pull request heads.",
    registers: [this.registry],
  });
  private readonly pullsOpened = new Counter({
    name: "tether_pull_requests_opened_total",
    help: "Pull requests Tether opened for conversation branches.",
    registers: [this.registry],
  });
  private readonly collected = new Counter({
    name: "tether_collected_total",
    help: "What collection removed: idle workspaces and cached session files on a runner's disk, and saved transcripts pruned from Postgres (kind).",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });
  private readonly collectedBytes = new Counter({
    name: "tether_transcript_bytes_pruned_total",
    help: "Compressed bytes of saved transcripts pruned from Postgres by collection.",
    registers: [this.registry],
  });
  private readonly dbUp: Gauge;

  constructor(opts: MetricsOptions = {}) {
    this.gaugeTimeoutMs = opts.gaugeTimeoutMs ?? DEFAULT_GAUGE_TIMEOUT_MS;
    this.now = opts.now ?? (() => new Date());
    const fromDb = (
      name: string,
      help: string,
      pick: (f: QueueFigures) => number,
    ): Gauge<string> => {
      return new Gauge({
        name,
        help,
        registers: [this.registry],
        // prom-client calls this on every scrape, with the gauge as `this`.
        async collect() {
          const figures = await read();
          if (figures) this.set(pick(figures));
        },
      });
    };
    const read = () => this.readGauges();
    this.dbUp = new Gauge({
      name: "tether_stats_db_up",
      help: "1 when this scrape read the queue gauges from Postgres, 0 when that failed or timed out (they then keep their last values).",
      registers: [this.registry],
      async collect() {
        // readGauges sets this gauge; awaiting it here keeps the value of this scrape.
        await read();
      },
    });
    // This process's GitHub requests (src/github/request-count.ts), read from its tally.
    new Counter({
      name: "tether_github_requests_total",
      help: "Requests this process made to GitHub, by installation (app: the app's own JWT client), kind (turn: a runner's client for a task; intake; app) and not_modified (true: answered 304, which GitHub does not charge against the rate limit). Retries count.",
      labelNames: ["installation", "kind", "not_modified"] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const r of tallyRows())
          this.inc(
            { installation: r.installation, kind: r.kind, not_modified: String(r.notModified) },
            r.count,
          );
      },
    });
    new Gauge({
      name: "tether_github_ratelimit_remaining",
      help: "Requests left in GitHub's rate-limit window per installation, from x-ratelimit-remaining of the last response this process had.",
      labelNames: ["installation"] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [installation, h] of requestTally.headroom)
          this.set({ installation }, h.remaining);
      },
    });
    fromDb("tether_queue_depth", "Tasks waiting in the queue.", (f) => f.depth);
    fromDb(
      "tether_tasks_deferred",
      "Queued tasks waiting for their installation's GitHub rate limit to reset (TETHER_RATE_LIMIT_RESERVE); they run after it.",
      (f) => f.deferred,
    );
    fromDb(
      "tether_queue_oldest_age_seconds",
      "Age of the oldest queued task; 0 when the queue is empty.",
      (f) => f.oldestAgeSeconds ?? 0,
    );
    fromDb("tether_tasks_running", "Tasks running now, on all runners.", (f) => f.running);
    fromDb(
      "tether_runners_alive",
      "Runtimes whose heartbeat is younger than 60 s.",
      (f) => f.runnersAlive,
    );
    fromDb(
      "tether_answers_pending",
      "Finished tasks whose final answer GitHub has not taken yet; the runners keep retrying it.",
      (f) => f.answersPending,
    );
    // Every reason from the start, so a rate over it is 0, not absent, until the first refusal.
    for (const reason of WEBHOOK_REFUSALS) this.webhookRefused.inc({ reason }, 0);
    for (const limit of LIMIT_KINDS) this.refused.inc({ limit }, 0);
    for (const result of REDELIVERY_RESULTS) this.redeliveries.inc({ result }, 0);
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** Read the queue gauges from this pool at scrape time. Without it they stay at 0. */
  useDatabase(pool: Pool): this {
    this.pool = pool;
    return this;
  }

  /**
   * Count one finished turn. Never throws: an unknown outcome or reason is counted as "other"
   * (so a bad value cannot explode the label set), a missing or negative time is not observed.
   */
  recordTurn(turn: TurnRecord): void {
    const outcome = known(OUTCOMES, turn.outcome);
    const reason = turn.reason === null ? "none" : known(REASON_CODES, turn.reason);
    // A CLI the registry does not list counts as "other", never as another CLI.
    const cli = known(CLI_NAMES, turn.cli ?? DEFAULT_CLI);
    this.turns.inc({ outcome, reason, cli });
    this.triggers.inc({ trigger: known(TRIGGERS, turn.trigger ?? "comment") });
    if (nonNegative(turn.durationMs)) this.duration.observe({ outcome }, turn.durationMs / 1000);
    if (nonNegative(turn.queueWaitMs)) this.queueWait.observe(turn.queueWaitMs / 1000);
    const p = turn.publish;
    if (p) {
      this.publishes.inc({
        result: known(PUBLISH_RESULTS, p.result),
        reason: known(PUBLISH_REASONS, p.reason ?? "none"),
      });
      if (nonNegative(p.commits) && p.commits > 0) this.commitsPushed.inc(p.commits);
      if (p.pullOpened) this.pullsOpened.inc();
    }
    // Server names come from the operator's file (at most 50): a bounded label set.
    for (const [server, calls] of Object.entries(turn.mcpToolCalls ?? {}))
      if (nonNegative(calls) && calls > 0)
        this.mcpCalls.inc({ server: server.slice(0, 48) }, calls);
    const resumed = reason === "resumed" ? "true" : "false";
    const u = turn.usage;
    if (!u) return;
    const kinds = [
      ["input", u.inputTokens],
      ["output", u.outputTokens],
      ["cache_read", u.cacheReadTokens],
      ["cache_creation", u.cacheCreationTokens],
    ] as const;
    for (const [kind, value] of kinds) {
      if (nonNegative(value)) this.tokens.inc({ kind, resumed }, value);
    }
    if (nonNegative(u.costUsd)) this.cost.inc({ resumed, cli }, u.costUsd);
  }

  /** Count a task a spend limit kept from running, once for each limit it reached. */
  recordRefused(limits: readonly string[]): void {
    for (const limit of new Set(limits)) this.refused.inc({ limit: known(LIMIT_KINDS, limit) });
  }

  /** Count a request the webhook route refused. */
  recordWebhookRefused(reason: WebhookRefusal): void {
    this.webhookRefused.inc({ reason: known(WEBHOOK_REFUSALS, reason) });
  }

  /** Count deliveries the inbox sweep deleted. */
  recordScheduleTick(result: "queued" | "absorbed" | "skipped"): void {
    this.scheduleTicks.inc({ result });
  }

  recordDeliveriesPruned(n: number): void {
    if (nonNegative(n) && n > 0) this.deliveriesPruned.inc(n);
  }

  /** Count one redelivery asked of GitHub. */
  recordRedelivery(result: RedeliveryResult): void {
    this.redeliveries.inc({ result: known(REDELIVERY_RESULTS, result) });
  }

  /** Count what one collection removed. */
  recordCollected(c: {
    workspaces: number;
    sessionFiles: number;
    transcripts: number;
    transcriptBytes: number;
  }): void {
    if (nonNegative(c.workspaces)) this.collected.inc({ kind: "workspace" }, c.workspaces);
    if (nonNegative(c.sessionFiles)) this.collected.inc({ kind: "session_file" }, c.sessionFiles);
    if (nonNegative(c.transcripts)) this.collected.inc({ kind: "transcript" }, c.transcripts);
    if (nonNegative(c.transcriptBytes)) this.collectedBytes.inc(c.transcriptBytes);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition of every metric. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * One database read per scrape, shared by the gauges (prom-client collects them in parallel),
   * bounded by the statement timeout and, in case the pool itself is exhausted, by a timer.
   */
  private readGauges(): Promise<QueueFigures | undefined> {
    const pool = this.pool;
    if (!pool) return Promise.resolve(undefined);
    this.inflight ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      try {
        const deadline = new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), this.gaugeTimeoutMs + 500);
        });
        const read = readQueueFigures(pool, { now: this.now(), timeoutMs: this.gaugeTimeoutMs });
        read.catch(() => {}); // it may settle after the deadline; nobody waits for it then
        const figures = await Promise.race([read, deadline]).catch(() => undefined);
        this.dbUp.set(figures ? 1 : 0);
        return figures;
      } finally {
        clearTimeout(timer);
        this.inflight = undefined;
      }
    })();
    return this.inflight;
  }
}

let shared: Metrics | undefined;

/**
 * The process's metrics: what /metrics serves and what the runner of this process records into.
 * Made on first use, with Node's default process metrics.
 */
export function processMetrics(): Metrics {
  shared ??= new Metrics({ defaultMetrics: true });
  return shared;
}
