/**
 * Soak drill: many turns across many issues against the built app, with random /cancel
 * comments and one runner killed (SIGKILL) and restarted mid-way. Two processes share the
 * work: a long-running one (webhooks, intake and a runner; its memory is sampled every
 * second) and a runner-only one, the one that gets killed. GitHub is the local stand-in; the
 * CLI is the scripted stand-in (test/helpers/standin-claude.mjs), or the real one
 * against the fake Messages API with --real-cli.
 *
 * Afterwards it checks and prints: every task terminal (tasks by status); every request in
 * exactly one task; every task that started answered exactly once, and none that never
 * started answered at all; no process left in the workspaces; and the long-running
 * process's resident memory, first third against last third.
 *
 *   npm run build && npx tsx scripts/soak.ts                      # CI size: 100 turns, 10 issues
 *   npx tsx scripts/soak.ts --turns 500 --issues 50               # the full soak
 *   npx tsx scripts/soak.ts --turns 60 --issues 6 --real-cli      # with the real Claude CLI
 *
 * Options: --turns N (requests, each on an issue with nothing queued, so each is a turn of its
 * own unless a /cancel stops it first), --issues N, --cancel-rate R (share of requests followed by
 * a /cancel, default 0.08), --interval-ms N (least time between requests, default 60),
 * --real-cli. Exit code 1 when a check fails.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Pool } from "../src/db/pool.js";
import { REPO, startStack, type AppProcess, type Stack } from "../test/helpers/e2e-stack.js";
import {
  STANDIN_CLAUDE,
  deliverComment,
  deliveriesByStatus,
  markerCounts,
  rssMiB,
  sleep,
  tasksByStatus,
  tasksOfComments,
  waitAllTerminal,
  type Delivered,
} from "../test/hardening/helpers/drill.js";

export interface SoakOptions {
  pool: Pool;
  databaseUrl: string;
  turns: number;
  issues: number;
  cancelRate?: number;
  intervalMs?: number;
  realCli?: boolean;
  /** Progress lines go here (default: nowhere). */
  say?: (line: string) => void;
}

export interface SoakCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface SoakReport {
  turns: number;
  issues: number;
  cancels: number;
  tasks: number;
  tasksByStatus: Record<string, number>;
  /** Why the failed tasks failed, with counts. */
  failures: Record<string, number>;
  deliveriesByStatus: Record<string, number>;
  /** How many tasks had 0, 1, 2… answers, for those that started and those that never did. */
  answersPerStartedTask: Record<string, number>;
  answersPerUnstartedTask: Record<string, number>;
  orphans: Array<{ pid: number; cmd: string }>;
  rss: { samples: number[]; firstThirdMiB: number; lastThirdMiB: number; maxMiB: number };
  killedRunner: { at: number; runningTasks: number };
  wallMs: number;
  checks: SoakCheck[];
}

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
`;

export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const say = o.say ?? (() => {});
  const cancelRate = o.cancelRate ?? 0.08;
  const intervalMs = o.intervalMs ?? 60;
  const started = Date.now();
  const cli: Record<string, string> = o.realCli
    ? {}
    : { TETHER_CLAUDE_PATH: STANDIN_CLAUDE, CLAUDE_CODE_STANDIN_DELAY_MS: "100-1200" };
  const stack = await startStack({
    pool: o.pool,
    databaseUrl: o.databaseUrl,
    config: CONFIG,
    env: { ...cli, TETHER_RUNNER_CONCURRENCY: "2", LOG_LEVEL: "warn" },
  });
  try {
    return await soak(stack, o, { say, cancelRate, intervalMs, started });
  } finally {
    await stack.close();
  }
}

async function soak(
  stack: Stack,
  o: SoakOptions,
  k: { say: (l: string) => void; cancelRate: number; intervalMs: number; started: number },
): Promise<SoakReport> {
  const { pool } = o;
  const main = stack.app;
  const startRunner = async (): Promise<AppProcess> => {
    const runner = await stack.startApp({ TETHER_ROLE: "runner" });
    stack.app = main; // webhooks keep going to the long-running process
    return runner;
  };
  let runner = await startRunner();

  const rss: number[] = [];
  const sampler = setInterval(() => {
    const v = rssMiB(main.child.pid!);
    if (v !== undefined) rss.push(Math.round(v * 10) / 10);
  }, 1000);

  const issues = Array.from(
    { length: o.issues },
    (_, i) =>
      stack.gh.addIssue({ repo: REPO, title: `Soak ${i}`, body: `Soak issue ${i}.`, user: "alice" })
        .number as number,
  );
  const requests: Array<Promise<Delivered>> = [];
  const cancels: Array<Promise<Delivered>> = [];
  const killAt = Math.floor(o.turns * 0.4);
  const killed = { at: killAt, runningTasks: 0 };
  for (let i = 0; i < o.turns; i++) {
    // Keep a short queue and write on an issue with nothing queued, so each request becomes a
    // turn of its own rather than coalescing into a waiting task (coalescing has its own tests).
    let waiting: Set<number> = new Set();
    for (let waited = 0; waited < 60_000; waited += 50) {
      const { rows } = await pool.query<{ issue_number: number }>(
        "SELECT issue_number FROM tasks WHERE status = 'queued'",
      );
      waiting = new Set(rows.map((r) => r.issue_number));
      if (waiting.size < 4) break;
      await sleep(50);
    }
    const free = issues.filter((n) => !waiting.has(n));
    const from = free.length ? free : issues;
    const issue = from[Math.floor(Math.random() * from.length)]!;
    requests.push(deliverComment(stack, issue, `@tether soak request ${i} on #${issue}`));
    if (Math.random() < k.cancelRate) {
      const wait = Math.floor(Math.random() * 1500);
      cancels.push(
        sleep(wait).then(() => deliverComment(stack, issue, "@tether /cancel", { user: "bob" })),
      );
    }
    if (i === killAt) {
      const { rows } = await pool.query(
        "SELECT count(*)::int AS n FROM tasks WHERE status = 'running' AND locked_by LIKE $1",
        [`%/${runner.child.pid}/%`],
      );
      killed.runningTasks = rows[0].n as number;
      k.say(`request ${i}: killing the runner-only process (${killed.runningTasks} running)`);
      await runner.kill();
      await sleep(500);
      runner = await startRunner();
      k.say("runner restarted");
    }
    if (i % 50 === 49)
      k.say(`${i + 1}/${o.turns} requests sent; ${JSON.stringify(await tasksByStatus(pool))}`);
    await sleep(k.intervalMs);
  }
  const delivered = await Promise.all(requests);
  await Promise.all(cancels);
  k.say("all requests delivered; waiting for the queue to drain");
  await waitAllTerminal(pool, Math.max(120_000, o.turns * 2000), stack);
  clearInterval(sampler);
  // Processes still in the workspaces a moment later would be strays of some run.
  await sleep(1500);
  const orphans = processesIn(stack.workspaces);

  const { rows: tasks } = await pool.query<{ id: number; started_at: Date | null; status: string }>(
    "SELECT id, started_at, status FROM tasks ORDER BY id",
  );
  const markers = markerCounts(stack, issues);
  const byComment = await tasksOfComments(pool);
  const perStarted: Record<string, number> = {};
  const perUnstarted: Record<string, number> = {};
  for (const t of tasks) {
    const n = String(markers.get(t.id) ?? 0);
    const into = t.started_at ? perStarted : perUnstarted;
    into[n] = (into[n] ?? 0) + 1;
  }
  const third = Math.max(1, Math.floor(rss.length / 3));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const firstThird = median(rss.slice(0, third));
  const lastThird = median(rss.slice(-third));
  const byStatus = await tasksByStatus(pool);
  const { rows: failed } = await pool.query<{ reason: string; n: number }>(
    `SELECT coalesce(outcome || ': ' || failure_reason, '?') AS reason, count(*)::int AS n
       FROM tasks WHERE status = 'failed' GROUP BY 1 ORDER BY 2 DESC`,
  );
  const failures = Object.fromEntries(failed.map((f) => [f.reason.slice(0, 200), f.n]));
  const inbox = await deliveriesByStatus(pool);
  const lostRequests = delivered.filter((d) => byComment.get(d.commentId)?.length !== 1);

  const checks: SoakCheck[] = [
    {
      name: "every task terminal",
      ok: !byStatus.queued && !byStatus.running,
      detail: JSON.stringify(byStatus),
    },
    {
      name: "every delivery handled, none given up on",
      ok: !inbox.pending && !inbox.failed,
      detail: JSON.stringify(inbox),
    },
    {
      name: "every request in exactly one task",
      ok: lostRequests.length === 0,
      detail: lostRequests.length
        ? `not: ${lostRequests.map((d) => d.commentId).join(",")}`
        : `${delivered.length} requests`,
    },
    {
      name: "every started task answered exactly once",
      ok: Object.keys(perStarted).every((n) => n === "1"),
      detail: JSON.stringify(perStarted),
    },
    {
      name: "no task that never started answered",
      ok: Object.keys(perUnstarted).every((n) => n === "0"),
      detail: JSON.stringify(perUnstarted),
    },
    {
      name: "no orphan processes in the workspaces",
      ok: orphans.length === 0,
      detail: orphans.length ? JSON.stringify(orphans) : "none",
    },
    {
      // Growth of the median, last third against first, within 30% and 20 MiB of slack: a leak
      // of a few KiB a turn grows without bound; GC noise does not.
      name: "memory of the long-running process flat",
      ok: rss.length >= 3 && lastThird <= firstThird * 1.3 + 20,
      detail: `${firstThird} MiB → ${lastThird} MiB (max ${Math.max(...rss)} MiB, ${rss.length} samples)`,
    },
  ];
  return {
    turns: o.turns,
    issues: o.issues,
    cancels: cancels.length,
    tasks: tasks.length,
    tasksByStatus: byStatus,
    failures,
    deliveriesByStatus: inbox,
    answersPerStartedTask: perStarted,
    answersPerUnstartedTask: perUnstarted,
    orphans,
    rss: {
      samples: rss,
      firstThirdMiB: firstThird,
      lastThirdMiB: lastThird,
      maxMiB: Math.max(...rss),
    },
    killedRunner: killed,
    wallMs: Date.now() - k.started,
    checks,
  };
}

/** Live processes whose working directory is inside `dir`. */
export function processesIn(dir: string): Array<{ pid: number; cmd: string }> {
  const root = fs.realpathSync(dir);
  const out: Array<{ pid: number; cmd: string }> = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cwd = fs.readlinkSync(`/proc/${name}/cwd`);
      if (cwd !== root && !cwd.startsWith(`${root}/`)) continue;
      const state = /^State:\s+(\S)/m.exec(fs.readFileSync(`/proc/${name}/status`, "utf8"))?.[1];
      if (state === "Z") continue;
      const cmd = fs.readFileSync(`/proc/${name}/cmdline`, "utf8").replace(/\0/g, " ").trim();
      out.push({ pid: Number(name), cmd: cmd.slice(0, 200) });
    } catch {
      /* gone, or not ours to look at */
    }
  }
  return out;
}

export function formatReport(r: SoakReport): string {
  const lines = [
    `soak: ${r.turns} requests on ${r.issues} issues, ${r.cancels} /cancel comments, ${r.tasks} tasks, ${(r.wallMs / 1000).toFixed(1)} s`,
    `  tasks by status:            ${JSON.stringify(r.tasksByStatus)}`,
    ...Object.entries(r.failures).map(([why, n]) => `    failed ×${n}: ${why}`),
    `  deliveries by status:       ${JSON.stringify(r.deliveriesByStatus)}`,
    `  answers per started task:   ${JSON.stringify(r.answersPerStartedTask)}  (answers → tasks)`,
    `  answers per unstarted task: ${JSON.stringify(r.answersPerUnstartedTask)}  (cancelled while queued)`,
    `  runner killed at request ${r.killedRunner.at} with ${r.killedRunner.runningTasks} task(s) running`,
    `  orphan processes:           ${r.orphans.length}`,
    `  RSS of the long-running process: first third ${r.rss.firstThirdMiB} MiB, last third ${r.rss.lastThirdMiB} MiB, max ${r.rss.maxMiB} MiB`,
    `  RSS samples (MiB, 1/s):     ${r.rss.samples.join(" ")}`,
    "",
    ...r.checks.map((c) => `  ${c.ok ? "PASS" : "FAIL"}  ${c.name}: ${c.detail}`),
  ];
  return lines.join("\n");
}

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? "") : undefined;
}

async function main(): Promise<void> {
  const { startOwnPostgres } = await import("../test/hardening/helpers/own-postgres.js");
  const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/src/main.js");
  if (!fs.existsSync(dist)) {
    console.error("soak: dist/src/main.js is missing; run `npm run build` first");
    process.exit(2);
  }
  const pg = await startOwnPostgres();
  try {
    const report = await runSoak({
      pool: pg.pool,
      databaseUrl: pg.url,
      turns: Number(flag("turns") ?? 100),
      issues: Number(flag("issues") ?? 10),
      cancelRate: Number(flag("cancel-rate") ?? 0.08),
      intervalMs: Number(flag("interval-ms") ?? 60),
      realCli: process.argv.includes("--real-cli"),
      say: (l) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${l}`),
    });
    console.log(formatReport(report));
    process.exitCode = report.checks.every((c) => c.ok) ? 0 : 1;
  } finally {
    await pg.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  void main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
