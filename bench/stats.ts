/**
 * /api/stats latency on a large tasks table.
 *
 *   npx tsx bench/stats.ts                      # 200,000 tasks (about a minute on 2 cores)
 *   npx tsx bench/stats.ts --tasks=1000000      # the target: 1,000,000 tasks
 *
 * Options: --tasks=N (or BENCH_TASKS), --days=D the tasks are spread evenly over (default 60,
 * so 30 d holds half of them; --days=30 puts every task in the widest range), --iterations=K
 * timed requests per range (default 30), --explain prints EXPLAIN ANALYZE of the stats queries.
 *
 * It starts its own embedded PostgreSQL in a temp directory (fsync off: only the seeding is
 * faster for it), seeds with INSERT … SELECT over generate_series (100,000 rows a statement,
 * through the roll-up triggers), runs VACUUM ANALYZE as autovacuum would, serves the real
 * dashboard handler on 127.0.0.1 and times GET /api/stats over HTTP, sequentially, after a
 * warm-up. For comparison it times the same turn aggregate computed straight from tasks (what
 * the roll-ups save), and what the roll-up triggers cost a runner's single-row updates.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startEmbeddedPostgres } from "../src/db/embedded.js";
import { migrate } from "../src/db/migrate.js";
import { createPool } from "../src/db/pool.js";
import { loadEnv } from "../src/env.js";
import { createLogger } from "../src/log.js";
import { repoRowsQuery } from "../src/sql/stats/turns/repos.js";
import { hourRowsQuery } from "../src/sql/stats/turns/by-hour.js";
import { statsWindow, type StatsRange } from "../src/sql/stats/window.js";
import { dashboardRoutes } from "../src/web/dashboard-routes.js";
import { serveHandlers } from "../src/web/http.js";

function option(name: string, fallback: string): string {
  const arg = process.argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (arg === undefined) return fallback;
  return arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : "true";
}

const TASKS = Number(option("tasks", process.env.BENCH_TASKS ?? "200000"));
const DAYS = Number(option("days", "60"));
const ITERATIONS = Number(option("iterations", "30"));
const EXPLAIN = option("explain", "false") === "true";
const TOKEN = "bench-token-0123456789abcdef";
const RANGES: StatsRange[] = ["24h", "7d", "30d"];

if (!Number.isInteger(TASKS) || TASKS < 1000)
  throw new Error("--tasks must be a whole number ≥ 1000");
if (!(DAYS > 0)) throw new Error("--days must be a positive number");

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
const fmt = (ms: number): string => `${ms.toFixed(1)} ms`;

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-bench-stats-"));
  const pg = await startEmbeddedPostgres({
    dataDir: path.join(dir, "data"),
    settings: { fsync: "off", synchronous_commit: "off", full_page_writes: "off" },
  });
  const admin = createPool(pg.url, { max: 1 });
  await admin.query("CREATE DATABASE bench");
  await admin.end();
  const url = pg.url.replace(/\/postgres$/, "/bench");
  const pool = createPool(url, { max: 4 });
  let server: Awaited<ReturnType<typeof serveHandlers>> | undefined;
  try {
    await migrate(url);

    console.log(`seeding ${TASKS.toLocaleString("en-US")} tasks over ${DAYS} days`);
    let t0 = performance.now();
    await seed(pool, TASKS, DAYS);
    const seedMs = performance.now() - t0;
    t0 = performance.now();
    await pool.query("VACUUM ANALYZE tasks");
    const vacuumMs = performance.now() - t0;
    const { rows: size } = await pool.query<{ tasks: string; hourly: number; daily: number }>(
      `SELECT pg_size_pretty(pg_table_size('tasks')) AS tasks,
              (SELECT count(*) FROM turn_stats_hourly) AS hourly,
              (SELECT count(*) FROM turn_stats_daily_repo) AS daily`,
    );
    console.log(
      `seeded in ${(seedMs / 1000).toFixed(1)} s, VACUUM ANALYZE ${(vacuumMs / 1000).toFixed(1)} s; ` +
        `tasks ${size[0]?.tasks}; roll-ups: ${size[0]?.hourly} hourly rows, ${size[0]?.daily} daily repository rows`,
    );

    const env = loadEnv({ TETHER_DASHBOARD_TOKEN: TOKEN, LOG_LEVEL: "silent" });
    const log = createLogger("silent");
    server = await serveHandlers([dashboardRoutes({ env, log, pool })]);
    const headers = { authorization: `Bearer ${TOKEN}` };

    console.log(
      `\n/api/stats over HTTP, ${ITERATIONS} sequential requests per range after 3 warm-up requests`,
    );
    console.log("range  turns in window   p50        p90        p99        max");
    const summary: Record<string, number> = {};
    for (const range of RANGES) {
      let turns = 0;
      const times: number[] = [];
      for (let i = 0; i < ITERATIONS + 3; i++) {
        const started = performance.now();
        const res = await fetch(`${server.url}/api/stats?range=${range}`, { headers });
        const body = (await res.json()) as { totals?: { turns: number }; error?: string };
        const elapsed = performance.now() - started;
        if (res.status !== 200)
          throw new Error(`/api/stats?range=${range}: ${res.status} ${body.error}`);
        turns = body.totals?.turns ?? 0;
        if (i >= 3) times.push(elapsed);
      }
      times.sort((a, b) => a - b);
      summary[range] = quantile(times, 0.5);
      console.log(
        `${range.padEnd(6)} ${turns.toLocaleString("en-US").padStart(15)}   ${fmt(quantile(times, 0.5)).padEnd(10)} ` +
          `${fmt(quantile(times, 0.9)).padEnd(10)} ${fmt(quantile(times, 0.99)).padEnd(10)} ${fmt(times.at(-1) ?? NaN)}`,
      );
    }
    const worst = Math.max(...Object.values(summary));
    console.log(
      `\nslowest p50 ${fmt(worst)}: ${worst <= 200 ? "within" : "OVER"} the 200 ms target`,
    );

    console.log(
      "\nfor comparison, the turn aggregate straight from tasks (no roll-ups), 3 runs each:",
    );
    for (const range of RANGES) {
      const w = statsWindow(range, new Date());
      const times: number[] = [];
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        await pool.query(DIRECT_AGGREGATE, [w.from, w.to]);
        times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      console.log(`${range.padEnd(6)} p50 ${fmt(quantile(times, 0.5))}`);
    }

    await triggerCost(pool);

    if (EXPLAIN) {
      for (const range of RANGES) {
        const w = statsWindow(range, new Date());
        for (const [name, q] of [
          ["hourly roll-up", hourRowsQuery(w)],
          ["per repository", repoRowsQuery(w)],
        ] as const) {
          const { rows } = await pool.query<{ "QUERY PLAN": string }>(
            `EXPLAIN (ANALYZE, BUFFERS) ${q.text}`,
            q.values,
          );
          console.log(`\nEXPLAIN ANALYZE, ${name}, ${range}:`);
          for (const r of rows) console.log(`  ${r["QUERY PLAN"]}`);
        }
      }
    }
  } finally {
    await server?.close();
    await pool.end();
    await pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** What the stats read would cost without roll-ups: the same sums, grouped from tasks. */
const DIRECT_AGGREGATE = `
  SELECT GROUPING(repo, agent) AS g, count(*), sum(input_tokens), sum(output_tokens),
         sum(cache_read_tokens), sum(cache_creation_tokens), sum(cost_usd), sum(duration_ms)
    FROM tasks
   WHERE resume_decision IS NOT NULL AND created_at >= $1 AND created_at <= $2
   GROUP BY GROUPING SETS ((date_trunc('hour', created_at), is_follow_up, resume_decision,
                            resume_reason, outcome), (repo, agent))`;

/**
 * What the roll-up triggers add to a runner's writes: single-row updates as a runner makes them
 * (a heartbeat, which counts nothing, and a finish, which moves a turn between roll-up rows),
 * with the update trigger on and off.
 */
async function triggerCost(pool: ReturnType<typeof createPool>): Promise<void> {
  const N = 300;
  const { rows } = await pool.query<{ id: number }>(
    "SELECT id FROM tasks WHERE status = 'succeeded' ORDER BY id DESC LIMIT $1",
    [N],
  );
  const ids = rows.map((r) => r.id);
  const time = async (sql: string): Promise<number> => {
    const times: number[] = [];
    for (const id of ids) {
      const started = performance.now();
      await pool.query(sql, [id]);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return quantile(times, 0.5);
  };
  const heartbeat = "UPDATE tasks SET heartbeat_at = now() WHERE id = $1";
  const finish = (o: string) =>
    `UPDATE tasks SET outcome = '${o}', cost_usd = cost_usd + 0.01, input_tokens = input_tokens + 1 WHERE id = $1`;
  const on = { heartbeat: await time(heartbeat), finish: await time(finish("failed")) };
  await pool.query("ALTER TABLE tasks DISABLE TRIGGER turn_stats_update");
  const off = { heartbeat: await time(heartbeat), finish: await time(finish("success")) };
  await pool.query("ALTER TABLE tasks ENABLE TRIGGER turn_stats_update");
  console.log(`\nsingle-row UPDATE latency over a pooled connection, p50 of ${ids.length}:`);
  console.log(
    `  heartbeat (counts nothing): ${fmt(on.heartbeat)} with the roll-up trigger, ${fmt(off.heartbeat)} without`,
  );
  console.log(
    `  finish (outcome and usage): ${fmt(on.finish)} with the roll-up trigger, ${fmt(off.finish)} without`,
  );
}

/**
 * A plausible organisation: 300 repositories, three agents, 70 % follow-ups of which 80 %
 * resume, the rest spread over the fallback reasons, realistic token and cost figures (resumed
 * turns read the cache, fresh ones write it). The newest few tasks are queued or running.
 */
async function seed(pool: ReturnType<typeof createPool>, n: number, days: number): Promise<void> {
  await pool.query(
    `INSERT INTO runtimes (id, hostname, home_dir, cli_path, cli_version, can_resume, concurrency, running, heartbeat_at)
     SELECT 'runner-' || i, 'host-' || i, '/home/tether', '/usr/bin/claude', '2.1.197', true, 4, 2,
            now() - make_interval(secs => i * 20)
       FROM generate_series(1, 4) i`,
  );
  const BATCH = 100_000;
  for (let first = 1; first <= n; first += BATCH) {
    await seedBatch(pool, first, Math.min(n, first + BATCH - 1), n, days);
  }
}

async function seedBatch(
  pool: ReturnType<typeof createPool>,
  first: number,
  last: number,
  n: number,
  days: number,
): Promise<void> {
  await pool.query(
    `INSERT INTO tasks (repo, repo_id, installation_id, issue_number, agent, status, trigger_comment_id,
                        trigger_author, trigger_url, trigger_body, runtime_id, session_id,
                        resume_decision, resume_reason, is_follow_up, outcome, model,
                        input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,
                        cost_usd, num_turns, duration_ms, locked_by, created_at, updated_at,
                        started_at, finished_at)
     SELECT repo, (hashtext(repo)::bigint & 2147483647) + 1, 1, issue, agent, status, g, 'octocat',
            'https://github.com/' || repo || '/issues/' || issue || '#issuecomment-' || g,
            '@tether please look', 'runner-' || (1 + g % 4),
            CASE WHEN status <> 'queued' THEN md5(g::text)::uuid::text END,
            CASE WHEN status <> 'queued' THEN CASE WHEN resumed THEN 'resume' ELSE 'fresh' END END,
            CASE WHEN status <> 'queued' THEN reason END,
            CASE WHEN status <> 'queued' THEN follow_up END,
            CASE WHEN status IN ('queued', 'running') THEN NULL
                 WHEN r3 < 0.93 THEN 'success' WHEN r3 < 0.96 THEN 'failed'
                 WHEN r3 < 0.97 THEN 'timed_out' WHEN r3 < 0.98 THEN 'poisoned'
                 WHEN r3 < 0.99 THEN 'stalled' ELSE 'cancelled' END,
            'claude-sonnet-4-5',
            fin * CASE WHEN resumed THEN 2000 + (r4 * 3000)::int ELSE 15000 + (r4 * 10000)::int END,
            fin * (500 + (r4 * 1500)::int),
            fin * CASE WHEN resumed THEN 40000 + (r4 * 40000)::int ELSE (r4 * 5000)::int END,
            fin * CASE WHEN resumed THEN 1000 + (r4 * 3000)::int ELSE 40000 + (r4 * 30000)::int END,
            fin * CASE WHEN resumed THEN 0.02 + r4 * 0.05 ELSE 0.20 + r4 * 0.25 END,
            CASE WHEN fin = 1 THEN 1 + (r4 * 8)::int END,
            CASE WHEN fin = 1 THEN 5000 + (r4 * 120000)::int END,
            CASE WHEN status = 'running' THEN 'runner-1' END,
            created, created, created + interval '2 seconds',
            CASE WHEN fin = 1 THEN created + interval '60 seconds' END
       FROM (SELECT g, repo, agent, r3, r4, created, follow_up,
                    follow_up AND r2 < 0.8 AS resumed,
                    CASE WHEN NOT follow_up THEN 'no_prior_session'
                         WHEN r2 < 0.8 THEN 'resumed'
                         ELSE (ARRAY['forced_fresh', 'runtime_mismatch', 'workdir_changed', 'poisoned',
                                     'history_edited', 'expired', 'context_budget', 'resume_rejected',
                                     'resume_disabled'])[1 + floor((r2 - 0.8) / 0.2 * 9)::int]
                    END AS reason,
                    CASE WHEN g > $1 - 20 THEN 'queued' WHEN g > $1 - 28 THEN 'running'
                         WHEN r3 >= 0.99 THEN 'cancelled' WHEN r3 >= 0.93 THEN 'failed'
                         ELSE 'succeeded' END AS status,
                    CASE WHEN g <= $1 - 28 THEN 1 END AS fin,
                    CASE WHEN g > $1 - 28 THEN 1000000 + g ELSE 1 + g % 4000 END AS issue
               FROM (SELECT g, 'org/repo-' || lpad((g::bigint * 7919 % 300)::text, 3, '0') AS repo,
                            CASE g % 10 WHEN 0 THEN 'reviewer' WHEN 1 THEN 'docs' ELSE 'tether' END AS agent,
                            random() < 0.7 AS follow_up, random() AS r2, random() AS r3, random() AS r4,
                            now() - make_interval(secs => ($1 - g)::float8 / $1 * $2 * 86400) AS created
                       FROM generate_series($3::int, $4::int) g) base) s`,
    [n, days, first, last],
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
