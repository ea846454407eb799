/**
 * The many-runner drill (#34): several runner processes and two web processes of the built app
 * on one Postgres, many turns over many issues, and runners killed (SIGKILL) and replaced
 * mid-way by new ones under new runtime ids, as a Kubernetes Deployment replaces a lost pod.
 * GitHub is the local stand-in; the CLI is the scripted stand-in
 * (test/helpers/standin-claude.mjs) keeping real transcripts, so a follow-up resumes only when
 * its session really came back from Postgres onto whichever runner took it.
 *
 * Each issue gets its turns one after another (a comment, then the next once its task
 * finished), so every turn is a task of its own and every turn after an issue's first is a
 * follow-up eligible to resume; as many issues are in flight at once as the runners have slots.
 *
 * Checks: every task succeeded and was answered exactly once; every comment in exactly one
 * task; every follow-up resumed (reason `resumed`) in its key's one session. Figures: turns per
 * second, claim latency (a task's created_at to its first claim, started_at: the queue wait,
 * NOTIFY and the claim statement), and the most Postgres connections seen (pg_stat_activity on
 * the drill's database, sampled every 250 ms).
 *
 *   npm run build && npx tsx bench/many-runners.ts     # full size: 8 runners, 2 web, 400 turns, 100 issues, 2 killed
 *   npx tsx bench/many-runners.ts --runners 4 --turns 40 --issues 10 --kills 1
 *
 * test/hardening/many-runners.test.ts runs it at CI size.
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Pool } from "../src/db/pool.js";
import {
  REPO,
  SECRET,
  startStack,
  type AppProcess,
  type Stack,
} from "../test/helpers/e2e-stack.js";
import { signedWebhook } from "../test/helpers/fake-github.js";
import {
  STANDIN_CLAUDE,
  markerCounts,
  sleep,
  tasksByStatus,
  tasksOfComments,
  waitAllTerminal,
} from "../test/hardening/helpers/drill.js";

export interface ManyRunnersOptions {
  pool: Pool;
  databaseUrl: string;
  runners: number;
  webs: number;
  turns: number;
  issues: number;
  /** Runners killed and replaced, spread over the run. */
  kills: number;
  /** Turns one runner runs at once (TETHER_RUNNER_CONCURRENCY). */
  concurrency?: number;
  /** The stand-in CLI's think time per turn, "min-max" ms. */
  cliDelayMs?: string;
  say?: (line: string) => void;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface ManyRunnersReport {
  runners: number;
  webs: number;
  turns: number;
  issues: number;
  tasks: number;
  kills: Array<{ atTurn: number; runtimeId: string; runningTasks: number }>;
  tasksByStatus: Record<string, number>;
  followUps: number;
  resumed: number;
  resumeReasons: Record<string, number>;
  /** Follow-ups that resumed on another runtime than the session's last one, and from Postgres. */
  resumedAcross: number;
  restoredFromStore: number;
  /** Tasks taken over after their runner was killed (attempts > 1). */
  retried: number;
  wallMs: number;
  turnsPerSecond: number;
  claimLatencyMs: { p50: number; p90: number; p99: number; max: number };
  maxConnections: number;
  tasksPerRuntime: Record<string, number>;
  checks: Check[];
}

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
`;

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : NaN;
};

export async function runManyRunners(o: ManyRunnersOptions): Promise<ManyRunnersReport> {
  const say = o.say ?? (() => {});
  const concurrency = o.concurrency ?? 2;
  const stack = await startStack({
    pool: o.pool,
    databaseUrl: o.databaseUrl,
    config: CONFIG,
    env: {
      TETHER_ROLE: "web",
      TETHER_CLAUDE_PATH: STANDIN_CLAUDE,
      CLAUDE_CODE_STANDIN_TRANSCRIPT: "1",
      CLAUDE_CODE_STANDIN_DELAY_MS: o.cliDelayMs ?? "200-800",
      TETHER_RUNNER_CONCURRENCY: String(concurrency),
      LOG_LEVEL: "warn",
    },
  });
  const processes: AppProcess[] = [];
  try {
    return await drill(stack, processes, o, say, concurrency);
  } finally {
    for (const p of processes) await p.kill().catch(() => {});
    await stack.close();
  }
}

async function drill(
  stack: Stack,
  processes: AppProcess[],
  o: ManyRunnersOptions,
  say: (l: string) => void,
  concurrency: number,
): Promise<ManyRunnersReport> {
  const { pool } = o;
  const webs = [stack.app];
  for (let i = 1; i < o.webs; i++) {
    const web = await stack.spawnApp({ TETHER_ROLE: "web" });
    processes.push(web);
    webs.push(web);
  }
  let generation = 0;
  /** A runner-only process with a HOME, data directory and workspace root of its own. */
  const startRunner = async (slot: number): Promise<{ proc: AppProcess; runtimeId: string }> => {
    const runtimeId = `rt-many-${slot}-${generation++}`;
    const root = path.join(stack.tmp, runtimeId);
    for (const d of ["home", "data", "ws"]) fs.mkdirSync(path.join(root, d), { recursive: true });
    const proc = await stack.spawnApp({
      TETHER_ROLE: "runner",
      HOME: path.join(root, "home"),
      TETHER_DATA_DIR: path.join(root, "data"),
      TETHER_WORKSPACE_DIR: path.join(root, "ws"),
      TETHER_RUNTIME_ID: runtimeId,
    });
    processes.push(proc);
    return { proc, runtimeId };
  };
  // Settled, all of them, before a failure is thrown: a runner still starting when another
  // failed would otherwise come up after the clean-up and outlive the drill.
  const starts = await Promise.allSettled(
    Array.from({ length: o.runners }, (_, i) => startRunner(i)),
  );
  const failedStart = starts.find((r) => r.status === "rejected");
  if (failedStart) throw failedStart.reason;
  const runners = starts.map(
    (r) => (r as PromiseFulfilledResult<{ proc: AppProcess; runtimeId: string }>).value,
  );
  say(`${o.webs} web and ${o.runners} runner processes up`);

  let maxConnections = 0;
  const sampler = setInterval(() => {
    void pool
      .query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()",
      )
      .then(
        ({ rows }) => (maxConnections = Math.max(maxConnections, rows[0]?.n ?? 0)),
        () => {},
      );
  }, 250);

  const issues = Array.from(
    { length: o.issues },
    (_, i) =>
      stack.gh.addIssue({
        repo: REPO,
        title: `Many ${i}`,
        body: `Drill issue ${i}.`,
        user: "alice",
      }).number as number,
  );
  const perIssue = issues.map(
    (_, i) => Math.floor(o.turns / o.issues) + (i < o.turns % o.issues ? 1 : 0),
  );
  const commentIds: number[] = [];
  let sent = 0;
  let deliveries = 0;

  /** A comment on GitHub, its delivery sent to the web processes in turn until one takes it. */
  const comment = async (issueNumber: number, body: string): Promise<number> => {
    const c = stack.gh.addComment({ repo: REPO, issueNumber, body, user: "alice" });
    const ev = stack.gh.webhooks.issueComment({
      repo: REPO,
      issueNumber,
      commentId: c.id as number,
    });
    const deliveryId = randomUUID();
    for (let attempt = 0; ; attempt++) {
      const web = webs[deliveries++ % webs.length]!;
      const res = await signedWebhook(web.url, ev.name, ev.payload, SECRET, {
        deliveryId,
        signal: AbortSignal.timeout(10_000),
      }).catch(() => ({ status: 0 }));
      if (res.status >= 200 && res.status < 300) return c.id as number;
      if (attempt > 20) throw new Error(`delivery ${deliveryId} never taken (last ${res.status})`);
      await sleep(200);
    }
  };
  const finished = async (commentId: number): Promise<void> => {
    for (;;) {
      const { rows } = await pool.query<{ status: string }>(
        `SELECT t.status FROM tasks t JOIN task_comments c ON c.task_id = t.id WHERE c.comment_id = $1`,
        [commentId],
      );
      if (rows[0] && ["succeeded", "failed", "cancelled"].includes(rows[0].status)) return;
      await sleep(150);
    }
  };

  const killTurns = Array.from({ length: o.kills }, (_, k) =>
    Math.floor((o.turns * (k + 1)) / (o.kills + 1)),
  );
  const kills: ManyRunnersReport["kills"] = [];
  let killing = Promise.resolve();
  const maybeKill = (turn: number): void => {
    const k = killTurns.indexOf(turn);
    if (k < 0) return;
    killing = killing.then(async () => {
      const slot = k % runners.length;
      const victim = runners[slot]!;
      // Killed with turns in hand: wait (a while at most) until it runs one.
      let rows: Array<{ n: number }> = [];
      for (let waited = 0; waited < 30_000; waited += 100) {
        ({ rows } = await pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM tasks WHERE status = 'running' AND runtime_id = $1",
          [victim.runtimeId],
        ));
        if (rows[0]!.n > 0) break;
        await sleep(100);
      }
      kills.push({ atTurn: turn, runtimeId: victim.runtimeId, runningTasks: rows[0]!.n });
      say(`turn ${turn}: killing ${victim.runtimeId} (${rows[0]!.n} running) and replacing it`);
      await victim.proc.kill();
      runners[slot] = await startRunner(slot);
    });
  };

  const started = Date.now();
  // As many issues in flight as there are runner slots; each issue's turns one after another.
  const next = issues.map(() => 0);
  let cursor = 0;
  const lane = async (): Promise<void> => {
    for (;;) {
      let i = -1;
      for (let step = 0; step < issues.length; step++) {
        const j = (cursor + step) % issues.length;
        if (next[j]! < perIssue[j]! && !busy.has(j)) {
          i = j;
          break;
        }
      }
      if (i < 0) {
        if (next.every((n, j) => n >= perIssue[j]!)) return;
        await sleep(50);
        continue;
      }
      cursor = (i + 1) % issues.length;
      busy.add(i);
      const turn = sent++;
      const id = await comment(issues[i]!, `@tether many-runner turn ${next[i]} on #${issues[i]}`);
      next[i]!++;
      commentIds.push(id);
      maybeKill(turn);
      if (turn % 50 === 49) say(`${turn + 1}/${o.turns} turns sent`);
      await finished(id);
      busy.delete(i);
    }
  };
  const busy = new Set<number>();
  await Promise.all(Array.from({ length: o.runners * concurrency }, () => lane()));
  await killing;
  await waitAllTerminal(pool, 120_000, stack);
  clearInterval(sampler);
  const wallMs = Date.now() - started;

  const { rows: tasks } = await pool.query<{
    id: number;
    status: string;
    issue_number: number;
    session_id: string | null;
    is_follow_up: boolean | null;
    resume_reason: string | null;
    resumed_across: boolean | null;
    session_restore: string | null;
    runtime_id: string | null;
    attempts: number;
    created_at: Date;
    started_at: Date | null;
  }>(
    `SELECT id, status, issue_number, session_id, is_follow_up, resume_reason, resumed_across,
            session_restore, runtime_id,
            attempts, created_at, started_at FROM tasks ORDER BY id`,
  );
  const markers = markerCounts(stack, issues);
  const byComment = await tasksOfComments(pool);
  const followUps = tasks.filter((t) => t.is_follow_up);
  const resumeReasons: Record<string, number> = {};
  for (const t of followUps)
    resumeReasons[t.resume_reason ?? "?"] = (resumeReasons[t.resume_reason ?? "?"] ?? 0) + 1;
  const sessionsPerIssue = new Map<number, Set<string>>();
  for (const t of tasks) {
    if (!t.session_id) continue;
    const s = sessionsPerIssue.get(t.issue_number) ?? new Set<string>();
    s.add(t.session_id);
    sessionsPerIssue.set(t.issue_number, s);
  }
  const tasksPerRuntime: Record<string, number> = {};
  for (const t of tasks)
    tasksPerRuntime[t.runtime_id ?? "?"] = (tasksPerRuntime[t.runtime_id ?? "?"] ?? 0) + 1;
  const latencies = tasks
    .filter((t) => t.started_at)
    .map((t) => t.started_at!.getTime() - t.created_at.getTime());
  const answers = tasks.map((t) => markers.get(t.id) ?? 0);
  const byStatus = await tasksByStatus(pool);
  const notOnce = commentIds.filter((c) => byComment.get(c)?.length !== 1);
  const notResumed = followUps.filter((t) => t.resume_reason !== "resumed");

  const checks: Check[] = [
    {
      name: "one task per turn, every one succeeded",
      ok: tasks.length === o.turns && byStatus.succeeded === o.turns,
      detail: `${tasks.length} tasks ${JSON.stringify(byStatus)}`,
    },
    {
      name: "every comment in exactly one task",
      ok: commentIds.length === o.turns && notOnce.length === 0,
      detail: notOnce.length ? `not: ${notOnce.join(",")}` : `${commentIds.length} comments`,
    },
    {
      name: "every turn answered exactly once",
      ok: answers.every((n) => n === 1),
      detail: `answers per task: ${JSON.stringify(countOf(answers))}`,
    },
    {
      name: "every follow-up resumed",
      ok: followUps.length === o.turns - o.issues && notResumed.length === 0,
      detail: `${followUps.length} follow-ups ${JSON.stringify(resumeReasons)}`,
    },
    {
      name: "one session per issue",
      ok: issues.every((n) => sessionsPerIssue.get(n)?.size === 1),
      detail: `sessions per issue: ${JSON.stringify(countOf([...sessionsPerIssue.values()].map((s) => s.size)))}`,
    },
    {
      name: "the runners killed had turns in hand",
      ok: kills.length === o.kills && kills.every((k) => k.runningTasks > 0),
      detail: JSON.stringify(kills),
    },
  ];
  return {
    runners: o.runners,
    webs: o.webs,
    turns: o.turns,
    issues: o.issues,
    tasks: tasks.length,
    kills,
    tasksByStatus: byStatus,
    followUps: followUps.length,
    resumed: followUps.length - notResumed.length,
    resumeReasons,
    resumedAcross: followUps.filter((t) => t.resumed_across).length,
    restoredFromStore: followUps.filter((t) => t.session_restore === "store").length,
    retried: tasks.filter((t) => t.attempts > 1).length,
    wallMs,
    turnsPerSecond: tasks.length / (wallMs / 1000),
    claimLatencyMs: {
      p50: quantile(latencies, 0.5),
      p90: quantile(latencies, 0.9),
      p99: quantile(latencies, 0.99),
      max: Math.max(...latencies),
    },
    maxConnections,
    tasksPerRuntime,
    checks,
  };
}

function countOf(xs: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[String(x)] = (out[String(x)] ?? 0) + 1;
  return out;
}

export function formatReport(r: ManyRunnersReport): string {
  return [
    `many runners: ${r.runners} runners, ${r.webs} web, ${r.turns} turns over ${r.issues} issues, ${r.kills.length} runner(s) killed and replaced`,
    `  wall ${(r.wallMs / 1000).toFixed(1)} s, ${r.turnsPerSecond.toFixed(2)} turns/s`,
    `  claim latency (created → first claim): p50 ${r.claimLatencyMs.p50} ms, p90 ${r.claimLatencyMs.p90} ms, p99 ${r.claimLatencyMs.p99} ms, max ${r.claimLatencyMs.max} ms`,
    `  Postgres connections (max seen): ${r.maxConnections}`,
    `  follow-ups ${r.followUps}, resumed ${r.resumed} ${JSON.stringify(r.resumeReasons)} (${r.resumedAcross} on another runner, ${r.restoredFromStore} restored from Postgres); tasks taken over after a kill: ${r.retried}`,
    `  kills: ${JSON.stringify(r.kills)}`,
    `  tasks per runtime: ${JSON.stringify(r.tasksPerRuntime)}`,
    "",
    ...r.checks.map((c) => `  ${c.ok ? "PASS" : "FAIL"}  ${c.name}: ${c.detail}`),
  ].join("\n");
}

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

async function main(): Promise<void> {
  const { startOwnPostgres } = await import("../test/hardening/helpers/own-postgres.js");
  const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/src/main.js");
  if (!fs.existsSync(dist)) {
    console.error("many-runners: dist/src/main.js is missing; run `npm run build` first");
    process.exit(2);
  }
  const pg = await startOwnPostgres();
  try {
    const report = await runManyRunners({
      pool: pg.pool,
      databaseUrl: pg.url,
      runners: flag("runners", 8),
      webs: flag("webs", 2),
      turns: flag("turns", 400),
      issues: flag("issues", 100),
      kills: flag("kills", 2),
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
