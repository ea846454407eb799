import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { Metrics } from "../../src/metrics.js";
import { metricsRoute } from "../../src/web/metrics-route.js";
import { serveHandlers, type Served } from "../../src/web/http.js";
import { NOW, seedDashboardFixture } from "../helpers/dashboard-seed.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();
const log = createLogger("silent");
const METRICS_TOKEN = "metrics-token-0123456789";
const servers: Served[] = [];

beforeAll(async () => {
  await seedDashboardFixture(db.pool);
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** The value of one sample line, e.g. `tether_queue_depth` or `x{a="b"}`; undefined if absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function serve(metrics: Metrics, env: Record<string, string> = {}): Promise<Served> {
  const s = await serveHandlers([
    metricsRoute({ env: loadEnv({ LOG_LEVEL: "silent", ...env }), log }, metrics),
  ]);
  servers.push(s);
  return s;
}

describe("Metrics.recordTurn", () => {
  it("counts turns by outcome and reason, and observes duration and queue wait", async () => {
    const m = new Metrics();
    m.recordTurn({ outcome: "success", reason: "resumed", durationMs: 12_000, queueWaitMs: 800 });
    m.recordTurn({ outcome: "success", reason: "resumed", durationMs: 45_000, queueWaitMs: 3000 });
    m.recordTurn({
      outcome: "failed",
      reason: "runtime_mismatch",
      durationMs: 2000,
      queueWaitMs: 100,
      usage: { inputTokens: 1000, cacheReadTokens: 5000, costUsd: 0.25 },
    });
    const text = await m.render();
    expect(
      sample(text, 'tether_turns_total{outcome="success",reason="resumed",cli="claude"}'),
    ).toBe(2);
    expect(
      sample(text, 'tether_turns_total{outcome="failed",reason="runtime_mismatch",cli="claude"}'),
    ).toBe(1);
    expect(sample(text, 'tether_turn_duration_seconds_count{outcome="success"}')).toBe(2);
    expect(sample(text, 'tether_turn_duration_seconds_sum{outcome="success"}')).toBe(57);
    expect(sample(text, 'tether_turn_duration_seconds_bucket{le="15",outcome="success"}')).toBe(1);
    expect(sample(text, 'tether_turn_duration_seconds_bucket{le="60",outcome="success"}')).toBe(2);
    expect(sample(text, "tether_queue_wait_seconds_count")).toBe(3);
    expect(sample(text, 'tether_queue_wait_seconds_bucket{le="1"}')).toBe(2);
    expect(sample(text, 'tether_turn_tokens_total{kind="input",resumed="false"}')).toBe(1000);
    expect(sample(text, 'tether_turn_tokens_total{kind="cache_read",resumed="false"}')).toBe(5000);
    expect(sample(text, 'tether_turn_cost_usd_total{resumed="false",cli="claude"}')).toBe(0.25);
  });

  it("counts tool calls to the operator's MCP servers by server (#39)", async () => {
    const m = new Metrics();
    m.recordTurn({ outcome: "success", reason: "resumed", mcpToolCalls: { sentry: 2, docs: 0 } });
    m.recordTurn({ outcome: "success", reason: "resumed", mcpToolCalls: { sentry: 1 } });
    m.recordTurn({ outcome: "success", reason: "resumed", mcpToolCalls: null });
    const text = await m.render();
    expect(sample(text, 'tether_mcp_tool_calls_total{server="sentry"}')).toBe(3);
    expect(text).not.toContain('server="docs"');
  });

  it("counts turns by trigger; an unknown one as other", async () => {
    const m = new Metrics();
    m.recordTurn({ outcome: "success", reason: "resumed" });
    m.recordTurn({ outcome: "success", reason: "resumed", trigger: "review" });
    m.recordTurn({ outcome: "success", reason: "no_prior_session", trigger: "label" });
    m.recordTurn({ outcome: "success", reason: "no_prior_session", trigger: 'x"}' });
    const text = await m.render();
    expect(sample(text, 'tether_turn_triggers_total{trigger="comment"}')).toBe(1);
    expect(sample(text, 'tether_turn_triggers_total{trigger="review"}')).toBe(1);
    expect(sample(text, 'tether_turn_triggers_total{trigger="label"}')).toBe(1);
    expect(sample(text, 'tether_turn_triggers_total{trigger="other"}')).toBe(1);
  });

  it("splits turns and cost by agent CLI", async () => {
    const m = new Metrics();
    m.recordTurn({ outcome: "success", reason: "resumed", usage: { costUsd: 0.5 } });
    m.recordTurn({
      outcome: "success",
      reason: "resumed",
      cli: "codex",
      usage: { costUsd: 0.125 },
    });
    m.recordTurn({ outcome: "poisoned", reason: "resumed", cli: "codex" });
    const text = await m.render();
    expect(
      sample(text, 'tether_turns_total{outcome="success",reason="resumed",cli="claude"}'),
    ).toBe(1);
    expect(sample(text, 'tether_turns_total{outcome="success",reason="resumed",cli="codex"}')).toBe(
      1,
    );
    expect(
      sample(text, 'tether_turns_total{outcome="poisoned",reason="resumed",cli="codex"}'),
    ).toBe(1);
    expect(sample(text, 'tether_turn_cost_usd_total{resumed="true",cli="codex"}')).toBe(0.125);
    expect(sample(text, 'tether_turn_cost_usd_total{resumed="true",cli="claude"}')).toBe(0.5);
  });

  it("counts publishes by result and reason, commits pushed and pull requests opened", async () => {
    const m = new Metrics();
    const turn = { outcome: "success" as const, reason: "resumed" as const };
    m.recordTurn({
      ...turn,
      publish: { result: "published", reason: null, commits: 1, pullOpened: true },
    });
    m.recordTurn({
      ...turn,
      publish: { result: "published", reason: null, commits: 2, pullOpened: false },
    });
    m.recordTurn({
      ...turn,
      publish: { result: "refused", reason: "secret", commits: 0, pullOpened: false },
    });
    m.recordTurn({
      ...turn,
      publish: { result: "refused", reason: "made-up", commits: 0, pullOpened: false },
    });
    m.recordTurn(turn);
    const text = await m.render();
    expect(sample(text, 'tether_publish_total{result="published",reason="none"}')).toBe(2);
    expect(sample(text, 'tether_publish_total{result="refused",reason="secret"}')).toBe(1);
    expect(sample(text, 'tether_publish_total{result="refused",reason="other"}')).toBe(1);
    expect(sample(text, "tether_commits_pushed_total")).toBe(3);
    expect(sample(text, "tether_pull_requests_opened_total")).toBe(1);
  });

  it("never throws on bad input, and keeps the label set bounded", async () => {
    const m = new Metrics();
    expect(() =>
      m.recordTurn({
        outcome: "exploded" as never,
        reason: "made_up" as never,
        durationMs: Number.NaN,
        queueWaitMs: -5,
        usage: { inputTokens: Number.POSITIVE_INFINITY, costUsd: -1 },
      }),
    ).not.toThrow();
    m.recordTurn({ outcome: "success", reason: null });
    const text = await m.render();
    expect(sample(text, 'tether_turns_total{outcome="other",reason="other",cli="claude"}')).toBe(1);
    expect(sample(text, 'tether_turns_total{outcome="success",reason="none",cli="claude"}')).toBe(
      1,
    );
    expect(sample(text, "tether_queue_wait_seconds_count")).toBe(0);
    expect(text).not.toContain("exploded");
    expect(text).not.toContain("made_up");
  });

  it("each Metrics has its own registry", async () => {
    const a = new Metrics();
    const b = new Metrics();
    a.recordTurn({ outcome: "success", reason: "resumed" });
    expect(
      sample(
        await b.render(),
        'tether_turns_total{outcome="success",reason="resumed",cli="claude"}',
      ),
    ).toBe(undefined);
  });
});

describe("queue gauges read from Postgres at scrape time", () => {
  it("report queue depth, oldest age, running tasks, live runners and pending answers", async () => {
    const m = new Metrics({ now: () => NOW }).useDatabase(db.pool);
    const text = await m.render();
    expect(sample(text, "tether_queue_depth")).toBe(2);
    expect(sample(text, "tether_queue_oldest_age_seconds")).toBe(900);
    expect(sample(text, "tether_tasks_running")).toBe(1);
    expect(sample(text, "tether_runners_alive")).toBe(1);
    expect(sample(text, "tether_answers_pending")).toBe(1);
    expect(sample(text, "tether_stats_db_up")).toBe(1);
  });

  it("follow the table between scrapes", async () => {
    const m = new Metrics({ now: () => NOW }).useDatabase(db.pool);
    await m.render();
    const { rows } = await db.pool.query<{ id: number }>(
      "UPDATE tasks SET status = 'cancelled' WHERE status = 'queued' AND issue_number = 2 RETURNING id",
    );
    try {
      const text = await m.render();
      expect(sample(text, "tether_queue_depth")).toBe(1);
      expect(sample(text, "tether_queue_oldest_age_seconds")).toBe(300);
    } finally {
      await db.pool.query("UPDATE tasks SET status = 'queued' WHERE id = $1", [rows[0]?.id]);
    }
  });

  it("a blocked database never hangs a scrape: db_up 0, the gauges keep their last values", async () => {
    const m = new Metrics({ now: () => NOW, gaugeTimeoutMs: 300 }).useDatabase(db.pool);
    await m.render();
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE");
      const started = Date.now();
      const text = await m.render();
      expect(Date.now() - started).toBeLessThan(2000);
      expect(sample(text, "tether_stats_db_up")).toBe(0);
      expect(sample(text, "tether_queue_depth")).toBe(2);
    } finally {
      await locker.query("ROLLBACK");
      await locker.end();
    }
    expect(sample(await m.render(), "tether_stats_db_up")).toBe(1);
  });
});

describe("GET /metrics", () => {
  it("is open without TETHER_METRICS_TOKEN, in Prometheus text format", async () => {
    const m = new Metrics({ now: () => NOW }).useDatabase(db.pool);
    m.recordTurn({ outcome: "success", reason: "resumed" });
    const s = await serve(m);
    const res = await fetch(`${s.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toContain("# TYPE tether_turns_total counter");
    expect(
      sample(text, 'tether_turns_total{outcome="success",reason="resumed",cli="claude"}'),
    ).toBe(1);
    expect(sample(text, "tether_queue_depth")).toBe(2);
  });

  it("with TETHER_METRICS_TOKEN: 401 without or with a wrong bearer token, 200 with it", async () => {
    const s = await serve(new Metrics(), { TETHER_METRICS_TOKEN: METRICS_TOKEN });
    const none = await fetch(`${s.url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const wrong = await fetch(`${s.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}x` },
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).not.toContain(METRICS_TOKEN);
    const right = await fetch(`${s.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(right.status).toBe(200);
    expect(await right.text()).toContain("tether_turns_total");
  });
});
