import fs from "node:fs";
import fc from "fast-check";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { runner } from "node-pg-migrate";
import type { Pool } from "../../src/db/pool.js";
import { MIGRATIONS_DIR } from "../../src/db/migrate.js";
import { createEmptyDatabase, createTestDatabase } from "../helpers/db.js";
import { repoIdOf } from "../helpers/seed.js";

/**
 * The roll-up tables must always equal the same sums computed from tasks, whatever sequence of
 * inserts, updates (single and multi-row), deletes and truncates ran. Checked against a
 * straight aggregate after random sequences, and under concurrent writers.
 */
const db = await createTestDatabase();
const BASE = Date.parse("2026-05-01T00:00:00Z");

const HOURLY_TRUTH = `
  SELECT date_bin('1 hour', created_at, timestamptz '2000-01-01 00:00:00+00') AS hour,
         coalesce(is_follow_up, false) OR resumed AS follow_up, resumed,
         coalesce(resume_reason, 'unknown') AS reason, coalesce(outcome, 'pending') AS outcome,
         count(*)::bigint AS turns, count(input_tokens)::bigint AS with_usage,
         coalesce(sum(input_tokens), 0)::bigint AS input_tokens,
         coalesce(sum(output_tokens), 0)::bigint AS output_tokens,
         coalesce(sum(cache_read_tokens), 0)::bigint AS cache_read_tokens,
         coalesce(sum(cache_creation_tokens), 0)::bigint AS cache_creation_tokens,
         count(cost_usd)::bigint AS with_cost, coalesce(sum(cost_usd), 0)::numeric(20, 6) AS cost_usd,
         count(duration_ms)::bigint AS with_duration, coalesce(sum(duration_ms), 0)::bigint AS duration_ms
    FROM (SELECT *, resume_decision = 'resume' AND resume_reason IS NOT DISTINCT FROM 'resumed' AS resumed
            FROM tasks WHERE resume_decision IS NOT NULL) t
   GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`;
const HOURLY_ROLLUP = `
  SELECT hour, follow_up, resumed, reason, outcome, turns, with_usage, input_tokens, output_tokens,
         cache_read_tokens, cache_creation_tokens, with_cost, cost_usd, with_duration, duration_ms
    FROM turn_stats_hourly
   WHERE (turns, with_usage, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,
          with_cost, cost_usd, with_duration, duration_ms) <> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
   ORDER BY 1, 2, 3, 4, 5`;
const DAILY_TRUTH = `
  SELECT date_bin('1 day', created_at, timestamptz '2000-01-01 00:00:00+00') AS day, repo, agent,
         count(*)::bigint AS turns,
         count(*) FILTER (WHERE coalesce(is_follow_up, false) OR resumed)::bigint AS follow_ups,
         count(*) FILTER (WHERE resumed)::bigint AS resumed,
         coalesce(sum(input_tokens), 0)::bigint AS input_tokens,
         coalesce(sum(output_tokens), 0)::bigint AS output_tokens,
         coalesce(sum(cache_read_tokens), 0)::bigint AS cache_read_tokens,
         coalesce(sum(cache_creation_tokens), 0)::bigint AS cache_creation_tokens,
         coalesce(sum(cost_usd), 0)::numeric(20, 6) AS cost_usd
    FROM (SELECT *, resume_decision = 'resume' AND resume_reason IS NOT DISTINCT FROM 'resumed' AS resumed
            FROM tasks WHERE resume_decision IS NOT NULL) t
   GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`;
const DAILY_ROLLUP = `
  SELECT day, repo, agent, turns, follow_ups, resumed, input_tokens, output_tokens,
         cache_read_tokens, cache_creation_tokens, cost_usd
    FROM turn_stats_daily_repo
   WHERE (turns, follow_ups, resumed, input_tokens, output_tokens, cache_read_tokens,
          cache_creation_tokens, cost_usd) <> (0, 0, 0, 0, 0, 0, 0, 0)
   ORDER BY 1, 2, 3`;

async function expectRollupsMatch(pool: Pool): Promise<void> {
  const [ht, hr, dt, dr] = await Promise.all(
    [HOURLY_TRUTH, HOURLY_ROLLUP, DAILY_TRUTH, DAILY_ROLLUP].map((q) => pool.query(q)),
  );
  expect(hr?.rows).toEqual(ht?.rows);
  expect(dr?.rows).toEqual(dt?.rows);
}

const turnFields = fc.record({
  hoursAgo: fc.integer({ min: 0, max: 60 }),
  repo: fc.constantFrom("a/one", "a/two", "b/three"),
  agent: fc.constantFrom("tether", "reviewer"),
  decision: fc.constantFrom(null, "resume", "fresh"),
  reason: fc.constantFrom(null, "resumed", "no_prior_session", "forced_fresh", "poisoned"),
  followUp: fc.constantFrom(null, true, false),
  outcome: fc.constantFrom(null, "success", "failed", "cancelled"),
  usage: fc.option(
    fc.record({
      input: fc.integer({ min: 0, max: 100_000 }),
      output: fc.integer({ min: 0, max: 10_000 }),
      cacheRead: fc.integer({ min: 0, max: 200_000 }),
      cacheCreation: fc.integer({ min: 0, max: 100_000 }),
      costMicros: fc.integer({ min: 0, max: 2_000_000 }),
      duration: fc.option(fc.integer({ min: 0, max: 600_000 })),
    }),
  ),
});
type TurnFields = typeof turnFields extends fc.Arbitrary<infer T> ? T : never;

const op = fc.oneof(
  fc.record({ kind: fc.constant("insert" as const), fields: turnFields }),
  fc.record({
    kind: fc.constant("insertMany" as const),
    fields: fc.array(turnFields, { minLength: 2, maxLength: 4 }),
  }),
  fc.record({ kind: fc.constant("update" as const), pick: fc.nat(), fields: turnFields }),
  fc.record({
    kind: fc.constant("finishAll" as const),
    outcome: fc.constantFrom("success", "stalled"),
  }),
  // One counted column alone, so each one's change detection is exercised on its own.
  fc.record({
    kind: fc.constant("touch" as const),
    pick: fc.nat(),
    fields: turnFields,
    column: fc.constantFrom(
      "created_at",
      "repo",
      "agent",
      "resume_decision",
      "resume_reason",
      "is_follow_up",
      "outcome",
      "input_tokens",
      "output_tokens",
      "cache_read_tokens",
      "cache_creation_tokens",
      "cost_usd",
      "duration_ms",
    ),
  }),
  fc.record({ kind: fc.constant("heartbeat" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("truncate" as const) }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

function columns(f: TurnFields): Record<string, unknown> {
  return {
    created_at: new Date(BASE - f.hoursAgo * 3_600_000 - (f.hoursAgo % 7) * 60_000),
    repo: f.repo,
    agent: f.agent,
    resume_decision: f.decision,
    resume_reason: f.reason,
    is_follow_up: f.followUp,
    outcome: f.outcome,
    input_tokens: f.usage?.input ?? null,
    output_tokens: f.usage?.output ?? null,
    cache_read_tokens: f.usage?.cacheRead ?? null,
    cache_creation_tokens: f.usage?.cacheCreation ?? null,
    cost_usd: f.usage ? (f.usage.costMicros / 1e6).toFixed(6) : null,
    duration_ms: f.usage?.duration ?? null,
  };
}

let issue = 1;
async function insert(pool: Pool, list: TurnFields[]): Promise<void> {
  const values: unknown[] = [];
  const tuples = list.map((f) => {
    const c = {
      ...columns(f),
      repo_id: repoIdOf(f.repo),
      installation_id: 1,
      issue_number: issue++,
      status: "succeeded",
      trigger_author: "octocat",
      trigger_url: "https://github.com/a/one/issues/1",
      trigger_body: "@tether go",
    };
    const start = values.length;
    values.push(...Object.values(c));
    return {
      cols: Object.keys(c),
      sql: `(${
        c &&
        Object.keys(c)
          .map((_, i) => `$${start + i + 1}`)
          .join(", ")
      })`,
    };
  });
  await pool.query(
    `INSERT INTO tasks (${tuples[0]?.cols.join(", ")}) VALUES ${tuples.map((t) => t.sql).join(", ")}`,
    values,
  );
}

async function apply(pool: Pool, o: Op): Promise<void> {
  const ids = async () =>
    (await pool.query<{ id: number }>("SELECT id FROM tasks ORDER BY id")).rows;
  switch (o.kind) {
    case "insert":
      return insert(pool, [o.fields]);
    case "insertMany":
      return insert(pool, o.fields);
    case "update": {
      const all = await ids();
      const target = all[o.pick % Math.max(1, all.length)];
      if (!target) return;
      const c = columns(o.fields);
      const keys = Object.keys(c);
      await pool.query(
        `UPDATE tasks SET ${keys.map((k, i) => `${k} = $${i + 2}`).join(", ")} WHERE id = $1`,
        [target.id, ...Object.values(c)],
      );
      return;
    }
    case "touch": {
      const all = await ids();
      const target = all[o.pick % Math.max(1, all.length)];
      if (!target) return;
      await pool.query(`UPDATE tasks SET ${o.column} = $2 WHERE id = $1`, [
        target.id,
        columns(o.fields)[o.column],
      ]);
      return;
    }
    case "finishAll":
      await pool.query(
        "UPDATE tasks SET outcome = $1, cost_usd = coalesce(cost_usd, 0) + 0.5 WHERE outcome IS NULL",
        [o.outcome],
      );
      return;
    case "heartbeat": {
      const all = await ids();
      const target = all[o.pick % Math.max(1, all.length)];
      if (target)
        await pool.query("UPDATE tasks SET heartbeat_at = now() WHERE id = $1", [target.id]);
      return;
    }
    case "delete": {
      const all = await ids();
      const target = all[o.pick % Math.max(1, all.length)];
      if (target) await pool.query("DELETE FROM tasks WHERE id = $1", [target.id]);
      return;
    }
    case "truncate":
      await pool.query("TRUNCATE tasks CASCADE");
      return;
  }
}

describe("turn roll-ups", () => {
  it("equal a straight aggregate of tasks after any sequence of writes", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 20 }), async (ops) => {
        await db.pool.query("TRUNCATE tasks CASCADE");
        for (const o of ops) await apply(db.pool, o);
        await expectRollupsMatch(db.pool);
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it.each([
    ["created_at", "2026-04-20T10:00:00Z"],
    ["repo", "b/three"],
    ["agent", "reviewer"],
    ["resume_decision", "fresh"],
    ["resume_reason", "forced_fresh"],
    ["is_follow_up", false],
    ["outcome", "failed"],
    ["input_tokens", 7],
    ["output_tokens", 7],
    ["cache_read_tokens", 7],
    ["cache_creation_tokens", 7],
    ["cost_usd", "9.5"],
    ["duration_ms", 7],
  ])("a change to %s alone moves the roll-ups", async (column, value) => {
    await db.pool.query("TRUNCATE tasks CASCADE");
    await insert(db.pool, [
      {
        hoursAgo: 1,
        repo: "a/one",
        agent: "tether",
        decision: "resume",
        reason: "resumed",
        followUp: true,
        outcome: "success",
        usage: { input: 1, output: 1, cacheRead: 1, cacheCreation: 1, costMicros: 1, duration: 1 },
      },
    ]);
    await db.pool.query(`UPDATE tasks SET ${column} = $1`, [value]);
    await expectRollupsMatch(db.pool);
  });

  it("a heartbeat writes nothing to the roll-ups", async () => {
    await db.pool.query("TRUNCATE tasks CASCADE");
    await insert(db.pool, [
      {
        hoursAgo: 1,
        repo: "a/one",
        agent: "tether",
        decision: "resume",
        reason: "resumed",
        followUp: true,
        outcome: null,
        usage: null,
      },
    ]);
    const before = await db.pool.query("SELECT xmin::text AS x FROM turn_stats_hourly");
    await db.pool.query("UPDATE tasks SET heartbeat_at = now(), locked_at = now()");
    const after = await db.pool.query("SELECT xmin::text AS x FROM turn_stats_hourly");
    expect(after.rows).toEqual(before.rows);
  });

  it("concurrent writers moving turns between the same roll-up rows neither deadlock nor drift", async () => {
    await db.pool.query("TRUNCATE tasks CASCADE");
    // Each writer owns three tasks in three different hours (so one statement touches several
    // roll-up rows) and flips their outcomes; writers start in opposite phases, so their
    // statements move turns between the same roll-up rows in opposite directions. Unordered
    // upserts would lock those rows in opposite orders and deadlock.
    const fields = (hour: number, outcome: "success" | "failed"): TurnFields => ({
      hoursAgo: hour,
      repo: "a/one",
      agent: "tether",
      decision: "resume",
      reason: "resumed",
      followUp: true,
      outcome,
      usage: {
        input: 10,
        output: 1,
        cacheRead: 100,
        cacheCreation: 5,
        costMicros: 1000,
        duration: 10,
      },
    });
    const writers = 4;
    for (let w = 0; w < writers; w++) {
      const outcome = w % 2 ? "success" : "failed";
      await insert(
        db.pool,
        [0, 1, 2].map((h) => fields(h, outcome)),
      );
    }
    const ids = (await db.pool.query<{ id: number }>("SELECT id FROM tasks ORDER BY id")).rows.map(
      (r) => r.id,
    );
    const writer = async (w: number) => {
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      try {
        for (let round = 0; round < 25; round++) {
          await c.query(
            `UPDATE tasks SET outcome = CASE outcome WHEN 'success' THEN 'failed' ELSE 'success' END,
                    cost_usd = cost_usd + 0.001
              WHERE id = ANY($1)`,
            [ids.slice(w * 3, w * 3 + 3)],
          );
        }
      } finally {
        await c.end();
      }
    };
    await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
    await expectRollupsMatch(db.pool);
  }, 60_000);

  it("backfill existing turns when the migration runs, and the migration reverts cleanly", async () => {
    const empty = await createEmptyDatabase();
    // Up to and including this migration only, so later migrations never get in the way.
    const ROLLUPS = "1763800000600_turn-stats-rollups";
    const upTo =
      fs
        .readdirSync(MIGRATIONS_DIR)
        .filter((f) => f.endsWith(".sql"))
        .sort()
        .indexOf(`${ROLLUPS}.sql`) + 1;
    expect(upTo).toBeGreaterThan(0);
    const run = (direction: "up" | "down", count: number) =>
      runner({
        databaseUrl: empty.url,
        dir: MIGRATIONS_DIR,
        direction,
        count,
        migrationsTable: "pgmigrations",
        log: () => {},
      });
    await run("up", upTo);
    await run("down", 1);
    const gone = await empty.pool.query(
      "SELECT count(*)::int AS n FROM pg_class WHERE relname IN ('turn_stats_hourly', 'turn_stats_daily_repo')",
    );
    expect(gone.rows[0].n).toBe(0);
    // Turns written before the roll-ups existed are counted once the migration runs.
    await insert(empty.pool, [
      {
        hoursAgo: 2,
        repo: "a/one",
        agent: "tether",
        decision: "resume",
        reason: "resumed",
        followUp: true,
        outcome: "success",
        usage: { input: 5, output: 5, cacheRead: 5, cacheCreation: 5, costMicros: 5, duration: 5 },
      },
      {
        hoursAgo: 30,
        repo: "b/three",
        agent: "reviewer",
        decision: "fresh",
        reason: "no_prior_session",
        followUp: false,
        outcome: null,
        usage: null,
      },
    ]);
    expect((await run("up", 1)).map((m) => m.name)).toEqual([ROLLUPS]);
    const n = await empty.pool.query("SELECT sum(turns)::int AS n FROM turn_stats_hourly");
    expect(n.rows[0].n).toBe(2);
    await expectRollupsMatch(empty.pool);
  });
});
