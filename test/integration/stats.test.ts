import pg from "pg";
import { STATS_CLIS } from "../../src/cli-registry.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { REASON_CODES, type Stats } from "../../src/sql/stats/figures.js";
import { readStats } from "../../src/sql/stats/read.js";
import { StatsTimeoutError } from "../../src/sql/stats/snapshot.js";
import { statsWindow } from "../../src/sql/stats/window.js";
import { dashboardRoutes } from "../../src/web/dashboard-routes.js";
import { serveHandlers, type Served } from "../../src/web/http.js";
import { createTestDatabase } from "../helpers/db.js";
import { NOW, seedDashboardFixture, seedSchedules } from "../helpers/dashboard-seed.js";
import { seedTask, type Row } from "../helpers/seed.js";

const db = await createTestDatabase();
const TOKEN = "stats-test-token-0123456789";
let rows: Row[];
let server: Served;

beforeAll(async () => {
  rows = await seedDashboardFixture(db.pool);
  const env = loadEnv({ TETHER_DASHBOARD_TOKEN: TOKEN, LOG_LEVEL: "silent" });
  server = await serveHandlers([
    dashboardRoutes({ env, log: createLogger("silent"), pool: db.pool, now: () => NOW }),
  ]);
});
afterAll(async () => {
  await server?.close();
});

async function api(range: string): Promise<{ status: number; body: Stats & { error?: string } }> {
  const res = await fetch(`${server.url}/api/stats?range=${range}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  return { status: res.status, body: (await res.json()) as Stats & { error?: string } };
}

const zeroReasons = Object.fromEntries(REASON_CODES.map((c) => [c, 0]));

describe("statsWindow", () => {
  it.each([
    ["24h", "hour", 24, "2026-03-09T13:00:00.000Z", "2026-03-10T12:00:00.000Z"],
    ["7d", "day", 7, "2026-03-04T00:00:00.000Z", "2026-03-10T00:00:00.000Z"],
    ["30d", "day", 30, "2026-02-09T00:00:00.000Z", "2026-03-10T00:00:00.000Z"],
  ] as const)("%s: %s buckets, %i of them, whole UTC units", (range, bucket, n, first, last) => {
    const w = statsWindow(range, NOW);
    expect(w.bucket).toBe(bucket);
    expect(w.buckets).toHaveLength(n);
    expect(w.buckets[0]?.toISOString()).toBe(first);
    expect(w.buckets.at(-1)?.toISOString()).toBe(last);
    expect(w.from.toISOString()).toBe(first);
    expect(w.to).toBe(NOW);
  });
});

describe("/api/stats on seeded tasks", () => {
  it("24h: exact resume rate, reason and outcome counts, totals and savings", async () => {
    const { status, body: s } = await api("24h");
    expect(status).toBe(200);
    expect(s.range).toBe("24h");
    expect(s.bucket).toBe("hour");
    expect(s.totals).toEqual({
      turns: 7,
      followUps: 6,
      resumed: 3,
      freshFollowUps: 3,
      firstTurns: 1,
      costUsd: 1.15,
      inputTokens: 70000,
      outputTokens: 4500,
      cacheReadTokens: 130000,
      cacheCreationTokens: 174000,
      refused: 0,
    });
    expect(s.resumeRate).toBe(0.5);
    expect(s.reasons).toEqual({
      ...zeroReasons,
      resumed: 3,
      no_prior_session: 1,
      forced_fresh: 1,
      runtime_mismatch: 1,
      resume_rejected: 1,
    });
    expect(s.outcomes).toEqual({
      success: 5,
      failed: 1,
      poisoned: 0,
      resume_rejected: 0,
      auth_failed: 0,
      timed_out: 0,
      stalled: 0,
      cancelled: 0,
      turn_limit: 0,
      pending: 1,
    });
    // Averages divide by the turns that reported usage: the running resumed turn has none.
    expect(s.savings.resumed).toEqual({
      turns: 3,
      withUsage: 2,
      avgInputTokens: 3000,
      avgOutputTokens: 1000,
      avgCacheReadTokens: 65000,
      avgCacheCreationTokens: 2000,
      avgCostUsd: 0.06,
      avgDurationMs: 40000,
      totalCostUsd: 0.12,
    });
    expect(s.savings.freshFollowUp.turns).toBe(3);
    expect(s.savings.freshFollowUp.avgInputTokens).toBeCloseTo(44000 / 3, 9);
    expect(s.savings.freshFollowUp.avgCacheCreationTokens).toBe(40000);
    expect(s.savings.freshFollowUp.avgCostUsd).toBe(0.243333);
    expect(s.savings.freshFirst).toMatchObject({
      turns: 1,
      avgInputTokens: 20000,
      avgCacheCreationTokens: 50000,
      avgCostUsd: 0.3,
    });
    expect(s.savings.costSavedPerResumedTurnUsd).toBe(0.183333);
    expect(s.savings.uncachedTokensSavedPerResumedTurn).toBeCloseTo(44000 / 3 + 40000 - 5000, 9);
  });

  it("24h: one point per hour, turns in the hour they were created", async () => {
    const { body: s } = await api("24h");
    expect(s.series).toHaveLength(24);
    expect(s.series[0]?.start).toBe("2026-03-09T13:00:00.000Z");
    const busy = s.series
      .map((p, i) => ({ i, ...p }))
      .filter((p) => p.turns > 0)
      .map(({ i, turns, followUps, resumed, resumeRate }) => ({
        i,
        turns,
        followUps,
        resumed,
        resumeRate,
      }));
    expect(busy).toEqual([
      { i: 18, turns: 1, followUps: 0, resumed: 0, resumeRate: null },
      { i: 19, turns: 1, followUps: 1, resumed: 1, resumeRate: 1 },
      { i: 20, turns: 1, followUps: 1, resumed: 1, resumeRate: 1 },
      { i: 21, turns: 1, followUps: 1, resumed: 0, resumeRate: 0 },
      { i: 22, turns: 1, followUps: 1, resumed: 0, resumeRate: 0 },
      { i: 23, turns: 2, followUps: 2, resumed: 1, resumeRate: 0.5 },
    ]);
    expect(s.series.reduce((a, p) => a + p.turns, 0)).toBe(s.totals.turns);
  });

  it("24h: per repository and agent, busiest first", async () => {
    const { body: s } = await api("24h");
    expect(s.reposTotal).toBe(2);
    expect(s.repos).toEqual([
      {
        repo: "octo/widgets",
        agent: "tether",
        turns: 4,
        refused: 0,
        followUps: 3,
        resumed: 2,
        resumeRate: 2 / 3,
        costUsd: 0.75,
        inputTokens: 44000,
        outputTokens: 3900,
        cacheReadTokens: 130000,
        cacheCreationTokens: 114000,
      },
      {
        repo: "octo/gadgets",
        agent: "reviewer",
        turns: 3,
        refused: 0,
        followUps: 3,
        resumed: 1,
        resumeRate: 1 / 3,
        costUsd: 0.4,
        inputTokens: 26000,
        outputTokens: 600,
        cacheReadTokens: 0,
        cacheCreationTokens: 60000,
      },
    ]);
  });

  it("7d and 30d: the turn from two days ago counts, the one from forty days ago does not", async () => {
    for (const range of ["7d", "30d"]) {
      const { body: s } = await api(range);
      expect(s.bucket).toBe("day");
      expect(s.totals.turns).toBe(8);
      expect(s.totals.followUps).toBe(7);
      expect(s.totals.resumed).toBe(4);
      expect(s.resumeRate).toBe(4 / 7);
      expect(s.reasons.resumed).toBe(4);
      expect(s.reasons.expired).toBe(0);
      // From the daily roll-up now.
      expect(s.repos[0]).toMatchObject({
        repo: "octo/widgets",
        agent: "tether",
        turns: 5,
        followUps: 4,
        resumed: 3,
        resumeRate: 0.75,
        costUsd: 0.79,
      });
      expect(s.series.at(-3)).toMatchObject({ start: "2026-03-08T00:00:00.000Z", turns: 1 });
      expect(s.series.at(-1)).toMatchObject({ turns: 7, followUps: 6, resumed: 3 });
    }
  });

  it("queue, runners and the latest tasks", async () => {
    const { body: s } = await api("24h");
    expect(s.queue).toEqual({
      depth: 2,
      oldestCreatedAt: "2026-03-10T12:19:56.000Z",
      oldestAgeSeconds: 900,
      running: 1,
      runnersAlive: 1,
      answersPending: 1,
      deferred: 0,
    });
    expect(s.runners.map((r) => [r.id, r.alive, r.heartbeatAgeSeconds, r.runningTasks])).toEqual([
      ["runner-a", true, 10, 1],
      ["runner-b", false, 300, 0],
    ]);
    expect(s.runners.map((r) => r.sandbox)).toEqual([
      "bwrap 0.8.0",
      "unavailable: bwrap: No permissions to create new namespace",
    ]);
    expect(s.runners[0]).toMatchObject({
      cliVersion: "2.1.197",
      concurrency: 4,
      hostname: "host-a",
    });
    expect(s.latest).toHaveLength(rows.length);
    expect(s.latest.map((t) => t.id)).toEqual(rows.map((r) => r.id).reverse());
    const first = s.latest.find((t) => t.id === rows[0]?.id);
    expect(first).toMatchObject({
      repo: "octo/widgets",
      status: "succeeded",
      outcome: "success",
      resumeDecision: "fresh",
      resumeReason: "no_prior_session",
      isFollowUp: false,
      costUsd: 0.3,
      triggerUrl: rows[0]?.trigger_url,
      answerUrl: "https://github.com/octo/widgets/issues/1#issuecomment-555",
    });
    expect(first?.sessionId).toMatch(/^sess-/);
  });

  it("a turn that finishes moves from pending to its outcome, and its usage counts", async () => {
    const running = rows[5];
    await db.pool.query(
      `UPDATE tasks SET status = 'succeeded', outcome = 'success', input_tokens = 1000,
              output_tokens = 200, cache_read_tokens = 80000, cache_creation_tokens = 500,
              cost_usd = 0.04, duration_ms = 15000, finished_at = $2, locked_by = NULL
        WHERE id = $1`,
      [running?.id, NOW],
    );
    try {
      const { body: s } = await api("24h");
      expect(s.outcomes.pending).toBe(0);
      expect(s.outcomes.success).toBe(6);
      expect(s.savings.resumed.withUsage).toBe(3);
      expect(s.savings.resumed.avgCostUsd).toBeCloseTo(0.16 / 3, 6);
      expect(s.totals.costUsd).toBe(1.19);
      expect(s.resumeRate).toBe(0.5);
    } finally {
      await db.pool.query(
        `UPDATE tasks SET status = 'running', outcome = NULL, input_tokens = NULL, output_tokens = NULL,
                cache_read_tokens = NULL, cache_creation_tokens = NULL, cost_usd = NULL,
                duration_ms = NULL, finished_at = NULL, locked_by = 'runner-a:1'
          WHERE id = $1`,
        [running?.id],
      );
    }
    expect((await api("24h")).body.outcomes.pending).toBe(1);
  });

  it("counts resumes across runners, restores from Postgres and from a cache, compactions, in the window only", async () => {
    const w = statsWindow("24h", NOW);
    const before = (await api("24h")).body.sessions;
    expect(before).toEqual({
      resumedAcross: 0,
      restoredFromStore: 0,
      restoredFromCache: 0,
      storeRestoreMsP50: null,
      compacted: 0,
    });
    const { rows: ids } = await db.pool.query(
      "SELECT id FROM tasks WHERE created_at >= $1 AND created_at < $2 ORDER BY id LIMIT 3",
      [w.from, w.to],
    );
    const [a, b, c] = ids.map((r) => r.id as number);
    await db.pool.query(
      "UPDATE tasks SET session_restore = 'store', restore_ms = $2, resumed_across = true WHERE id = $1",
      [a, 40],
    );
    await db.pool.query(
      "UPDATE tasks SET session_restore = 'store', restore_ms = $2, resumed_across = true WHERE id = $1",
      [b, 90],
    );
    await db.pool.query(
      "UPDATE tasks SET session_restore = 'cache', restore_ms = 2, compacted = true WHERE id = $1",
      [c],
    );
    // Outside the window: not counted.
    const old = await db.pool.query(
      "SELECT id FROM tasks WHERE created_at < $1 ORDER BY id LIMIT 1",
      [w.from],
    );
    if (old.rows[0])
      await db.pool.query(
        "UPDATE tasks SET session_restore = 'store', resumed_across = true, compacted = true WHERE id = $1",
        [old.rows[0].id],
      );
    try {
      expect((await api("24h")).body.sessions).toEqual({
        resumedAcross: 2,
        restoredFromStore: 2,
        restoredFromCache: 1,
        storeRestoreMsP50: 40,
        compacted: 1,
      });
    } finally {
      await db.pool.query(
        "UPDATE tasks SET session_restore = NULL, restore_ms = NULL, resumed_across = false, compacted = false",
      );
    }
  });

  it("no follow-up in the window: resumeRate is null, every reason still listed", async () => {
    const s = await readStats(db.pool, {
      range: "24h",
      now: new Date(NOW.getTime() + 90 * 24 * 3600_000),
      clis: STATS_CLIS,
    });
    expect(s.totals.turns).toBe(0);
    expect(s.resumeRate).toBeNull();
    expect(s.reasons).toEqual(zeroReasons);
    expect(s.repos).toEqual([]);
    expect(s.savings.costSavedPerResumedTurnUsd).toBeNull();
    expect(s.series.every((p) => p.turns === 0 && p.resumeRate === null)).toBe(true);
  });

  it("counts what became of the agents' changes: pull requests opened, commits pushed, refusals by reason", async () => {
    const at = new Date(NOW.getTime() - 3600_000);
    const seed = (publish: Record<string, unknown>) =>
      seedTask(db.pool, {
        repo: "octo/changes",
        status: "succeeded",
        outcome: "success",
        finished_at: at,
        ...publish,
      });
    await seed({ publish_result: "published", commits_pushed: 1, pull_opened: 12 });
    await seed({ publish_result: "published", commits_pushed: 2 });
    await seed({ publish_result: "refused", publish_reason: "secret" });
    await seed({ publish_result: "refused", publish_reason: "workflow" });
    await seed({ publish_result: "refused", publish_reason: "secret" });
    await seed({ publish_result: "failed", publish_reason: "permission" });
    await seed({ publish_result: "patch" });
    await seed({ publish_result: "unchanged" });
    // Finished outside the window: not counted.
    await seedTask(db.pool, {
      repo: "octo/changes",
      status: "succeeded",
      finished_at: new Date(NOW.getTime() - 3 * 24 * 3600_000),
      publish_result: "published",
      commits_pushed: 5,
    });
    const { status, body } = await api("24h");
    expect(status).toBe(200);
    expect(body.changes).toEqual({
      published: 2,
      commitsPushed: 3,
      pullRequestsOpened: 1,
      patches: 1,
      unchanged: 1,
      refused: { secret: 2, workflow: 1 },
      failed: { permission: 1 },
    });
  });

  it("counts finished turns by what started them, every trigger listed", async () => {
    const before = (await api("24h")).body.triggers;
    expect(Object.keys(before).sort()).toEqual([
      "assignment",
      "ci",
      "comment",
      "label",
      "review",
      "schedule",
    ]);
    const at = new Date(NOW.getTime() - 3600_000);
    const seed = (trigger: string, more: Record<string, unknown> = {}) =>
      seedTask(db.pool, {
        repo: "octo/triggers",
        status: "succeeded",
        outcome: "success",
        created_at: at,
        finished_at: at,
        trigger,
        ...more,
      });
    await seed("label");
    await seed("label");
    await seed("review");
    await seed("assignment", { status: "queued", outcome: null, finished_at: null }); // not a turn yet
    const after = (await api("24h")).body.triggers;
    expect(after).toEqual({ ...before, label: before.label! + 2, review: before.review! + 1 });
  });

  it("GitHub requests per turn by kind: first, follow-up, publishing; median and mean (#34)", async () => {
    const before = (await api("24h")).body.githubRequests;
    const none = { turns: 0, median: null, mean: null, notModifiedMedian: null };
    expect(before).toEqual({ first: none, followUp: none, publishing: none });
    const at = new Date(NOW.getTime() - 3600_000);
    const seed = (github_requests: number | null, more: Record<string, unknown> = {}) =>
      seedTask(db.pool, {
        repo: "octo/requests",
        status: "succeeded",
        outcome: "success",
        created_at: at,
        finished_at: at,
        is_follow_up: false,
        github_requests,
        ...more,
      });
    await seed(5);
    await seed(7);
    await seed(6, { is_follow_up: true, github_requests_not_modified: 3 });
    await seed(6, { is_follow_up: true, github_requests_not_modified: 5 });
    await seed(9, { is_follow_up: true }); // recorded before the 304s were: left out of theirs
    await seed(10, { is_follow_up: true, publish_result: "published" });
    await seed(null, { is_follow_up: true }); // recorded before the count: left out
    await seed(99, { created_at: new Date(NOW.getTime() - 3 * 24 * 3600_000) }); // outside 24h
    await seed(99, { status: "running", finished_at: null, locked_by: "r" }); // not finished
    const { body } = await api("24h");
    expect(body.githubRequests).toEqual({
      first: { turns: 2, median: 6, mean: 6, notModifiedMedian: null },
      followUp: { turns: 3, median: 6, mean: 7, notModifiedMedian: 4 },
      publishing: { turns: 1, median: 10, mean: 10, notModifiedMedian: null },
    });
    // The 7-day window takes the turn from three days ago.
    expect((await api("7d")).body.githubRequests.first).toEqual({
      turns: 3,
      median: 7,
      mean: 37,
      notModifiedMedian: null,
    });
  });

  it("counts the reviews agents posted, refused ones apart, and their line comments (#29)", async () => {
    expect((await api("24h")).body.reviews).toEqual({ posted: 0, failed: 0, lineComments: 0 });
    const at = new Date(NOW.getTime() - 3600_000);
    const seed = (
      review_result: string | null,
      review_line_comments: number | null,
      created_at = at,
    ) =>
      seedTask(db.pool, {
        repo: "octo/reviews",
        status: "succeeded",
        outcome: "success",
        created_at,
        finished_at: created_at,
        review_result,
        review_line_comments,
      });
    await seed("posted", 3);
    await seed("posted", 0); // every comment was off the diff: in the review's body
    await seed("failed", 0);
    await seed(null, null); // a turn that asked for no review
    await seed("posted", 5, new Date(NOW.getTime() - 3 * 24 * 3600_000)); // outside 24h
    expect((await api("24h")).body.reviews).toEqual({ posted: 2, failed: 1, lineComments: 3 });
    expect((await api("7d")).body.reviews).toEqual({ posted: 3, failed: 1, lineComments: 8 });
  });

  it("counts tool calls to the operator's MCP servers, by server (#39)", async () => {
    expect((await api("24h")).body.mcpToolCalls).toEqual({});
    const at = new Date(NOW.getTime() - 3600_000);
    const seed = (mcp_tool_calls: string | null, created_at = at) =>
      seedTask(db.pool, {
        repo: "octo/mcp",
        status: "succeeded",
        outcome: "success",
        created_at,
        finished_at: created_at,
        mcp_tool_calls,
      });
    await seed('{"sentry": 2, "docs": 0}');
    await seed('{"sentry": 1}');
    await seed(null); // an agent given no server
    await seed('{"docs": 4}', new Date(NOW.getTime() - 3 * 24 * 3600_000)); // outside 24h
    expect((await api("24h")).body.mcpToolCalls).toEqual({ docs: 0, sentry: 3 });
    expect((await api("7d")).body.mcpToolCalls).toEqual({ docs: 4, sentry: 3 });
  });

  it("counts CI loops started in the window by how they ended, every state listed", async () => {
    const before = (await api("24h")).body.ci;
    expect(Object.keys(before.loops).sort()).toEqual(["green", "limit", "open", "stopped"]);
    const at = new Date(NOW.getTime() - 3600_000);
    const seed = (state: string, attempts: number, started = at) =>
      db.pool.query(
        `INSERT INTO ci_loops (repo_id, issue_number, agent, pull_number, state, attempts, started_at)
         VALUES (77, 1, 'tether', 2, $1, $2, $3)`,
        [state, attempts, started],
      );
    await seed("green", 1);
    await seed("stopped", 3);
    await seed("stopped", 3, new Date(NOW.getTime() - 3 * 86_400_000)); // outside the window
    const after = (await api("24h")).body.ci;
    expect(after).toEqual({
      loops: {
        ...before.loops,
        green: before.loops.green! + 1,
        stopped: before.loops.stopped! + 1,
      },
      turns: before.turns + 4,
    });
  });

  it("lists every schedule, next due first, with its issue, last run (and that turn) and next run, in every range (#41)", async () => {
    expect((await api("24h")).body.schedules).toEqual([]);
    const last = rows[0]!;
    await seedSchedules(db.pool, { now: NOW, lastTaskId: last.id as number });
    const mins = (m: number) => new Date(NOW.getTime() + m * 60_000).toISOString();
    const want = [
      {
        repo: "octo/widgets",
        agent: "tether",
        issueNumber: 42,
        title: null,
        cron: "0 * * * *",
        timezone: "UTC",
        lastRunAt: mins(-35),
        lastTask: {
          id: last.id,
          status: "succeeded",
          outcome: "success",
          url: last.trigger_url,
        },
        nextRunAt: mins(25),
      },
      {
        repo: "octo/gadgets",
        agent: "reviewer",
        issueNumber: 7,
        title: null,
        cron: "0 9 * * 1",
        timezone: "Europe/Paris",
        lastRunAt: null,
        lastTask: null,
        nextRunAt: mins(120),
      },
      {
        repo: "octo/reports",
        agent: "tether",
        issueNumber: null,
        title: "Daily report",
        cron: "30 6 * * *",
        timezone: "UTC",
        lastRunAt: null,
        lastTask: null,
        nextRunAt: mins(24 * 60),
      },
    ];
    // Not windowed: the 30-day page lists the same schedules.
    for (const range of ["24h", "30d"]) expect((await api(range)).body.schedules).toEqual(want);
    await db.pool.query("DELETE FROM schedules");
  });

  it("rejects an unknown range with a message that names it", async () => {
    const { status, body } = await api("1y");
    expect(status).toBe(400);
    expect(body.error).toMatch(/range/);
  });
});

describe("statement timeout", () => {
  it("a blocked stats query is cancelled: StatsTimeoutError, and /api/stats answers 503", async () => {
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE turn_stats_hourly IN ACCESS EXCLUSIVE MODE");
      const started = Date.now();
      const err = await readStats(db.pool, {
        range: "24h",
        now: NOW,
        timeoutMs: 300,
        clis: STATS_CLIS,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StatsTimeoutError);
      expect((err as Error).message).toMatch(/300 ms/);
      expect(Date.now() - started).toBeLessThan(5000);

      const env = loadEnv({ TETHER_DASHBOARD_TOKEN: TOKEN, LOG_LEVEL: "silent" });
      const slow = await serveHandlers([
        dashboardRoutes(
          { env, log: createLogger("silent"), pool: db.pool, now: () => NOW },
          { statsTimeoutMs: 300 },
        ),
      ]);
      try {
        const res = await fetch(`${slow.url}/api/stats`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        expect(res.status).toBe(503);
        expect(((await res.json()) as { error: string }).error).toMatch(/cancelled/);
      } finally {
        await slow.close();
      }
    } finally {
      await locker.query("ROLLBACK");
      await locker.end();
    }
    // The pool's connections are usable again afterwards.
    expect((await api("24h")).status).toBe(200);
  });
});
