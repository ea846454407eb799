/** Shared pieces of the hardening drills: GitHub's side of a delivery, waiting, and tallies. */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Pool } from "../../../src/db/pool.js";
import { REPO, SECRET, type Stack } from "../../helpers/e2e-stack.js";
import { signedWebhook } from "../../helpers/fake-github.js";

/** The scripted stand-in CLI (see its header for the CLAUDE_CODE_STANDIN_* switches). */
export const STANDIN_CLAUDE = path.resolve(import.meta.dirname, "../../helpers/standin-claude.mjs");

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` until it returns something other than undefined/false, or throws at the deadline. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export interface Delivered {
  commentId: number;
  url: string;
  deliveryId: string;
  /** How many times the delivery was sent before the app took it (GitHub's redelivery). */
  attempts: number;
  /** Status of each attempt (0: no HTTP answer at all). */
  statuses: number[];
}

/**
 * A comment written on GitHub and its webhook delivered the way an operator relying on
 * GitHub's "Redeliver" would see it: a delivery the app did not take (a 5xx, or no answer) is
 * sent again with the same delivery id, with backoff, until it is taken or `timeoutMs` passes.
 * Reads `stack.app.url` on every attempt, so it follows an app that was restarted.
 */
export async function deliverComment(
  stack: Stack,
  issueNumber: number,
  body: string,
  opts: { user?: string; timeoutMs?: number } = {},
): Promise<Delivered> {
  const c = stack.gh.addComment({ repo: REPO, issueNumber, body, user: opts.user ?? "alice" });
  const ev = stack.gh.webhooks.issueComment({
    repo: REPO,
    issueNumber,
    commentId: c.id as number,
  });
  const deliveryId = randomUUID();
  const statuses: number[] = [];
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (let attempt = 1; ; attempt++) {
    let status = 0;
    try {
      const res = await signedWebhook(stack.app.url, ev.name, ev.payload, SECRET, {
        deliveryId,
        signal: AbortSignal.timeout(10_000),
      });
      status = res.status;
    } catch {
      status = 0;
    }
    statuses.push(status);
    if (status >= 200 && status < 300)
      return {
        commentId: c.id as number,
        url: String(c.html_url),
        deliveryId,
        attempts: attempt,
        statuses,
      };
    if (Date.now() > deadline)
      throw new Error(`delivery ${deliveryId} never taken: ${statuses.join(",")}`);
    await sleep(Math.min(2000, 200 * attempt));
  }
}

export type TaskRow = Record<string, unknown> & {
  id: number;
  status: string;
  issue_number: number;
  attempts: number;
};

export async function allTasks(pool: Pool): Promise<TaskRow[]> {
  return (await pool.query("SELECT * FROM tasks ORDER BY id")).rows as TaskRow[];
}

export async function deliveriesByStatus(pool: Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query(
    "SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status",
  );
  return Object.fromEntries(rows.map((r) => [r.status as string, r.n as number]));
}

export async function tasksByStatus(pool: Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query(
    "SELECT status, count(*)::int AS n FROM tasks GROUP BY status ORDER BY status",
  );
  return Object.fromEntries(rows.map((r) => [r.status as string, r.n as number]));
}

/**
 * Waits until the inbox holds no pending delivery and no task is queued or running; on timeout
 * says which are not and what the app said.
 */
export async function waitAllTerminal(pool: Pool, timeoutMs: number, stack?: Stack): Promise<void> {
  try {
    await waitFor(
      "every delivery handled and every task terminal",
      async () => {
        const { rows } = await pool.query(
          `SELECT (SELECT count(*)::int FROM tasks WHERE status IN ('queued', 'running'))
                + (SELECT count(*)::int FROM webhook_deliveries WHERE status = 'pending') AS n`,
        );
        return rows[0].n === 0;
      },
      timeoutMs,
      250,
    );
  } catch (err) {
    if (stack && process.env.TETHER_DRILL_DUMP)
      fs.writeFileSync(process.env.TETHER_DRILL_DUMP, stack.app.output());
    const { rows } = await pool.query(
      `SELECT id, issue_number, status, attempts, locked_by, heartbeat_at, created_at, started_at
         FROM tasks WHERE status IN ('queued', 'running') ORDER BY id`,
    );
    const pending = await pool.query(
      `SELECT delivery_id, dedupe_key, attempts, error, run_after FROM webhook_deliveries
        WHERE status = 'pending'`,
    );
    throw new Error(
      `${(err as Error).message}\nunfinished: ${JSON.stringify(rows)}` +
        `\npending deliveries: ${JSON.stringify(pending.rows)}` +
        (stack
          ? `\n--- app log ---\n${compactLog(stack.app.output(), { minLevel: "info", max: 150 })}`
          : ""),
    );
  }
}

/** The app's log, one short line per entry (level, component, task, message, error): for failures. */
export function compactLog(
  output: string,
  opts: { minLevel?: "info" | "warn"; max?: number } = {},
): string {
  const levels =
    opts.minLevel === "info" ? ["info", "warn", "error", "fatal"] : ["warn", "error", "fatal"];
  const lines: string[] = [];
  for (const l of output.split("\n")) {
    if (!l) continue;
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(l) as Record<string, unknown>;
    } catch {
      lines.push(l.slice(0, 300));
      continue;
    }
    if (!levels.includes(String(e.level))) continue;
    if (/^(POST|GET) \//.test(String(e.msg)) && e.level === "info") continue; // access log
    const err = e.err as { message?: string } | string | undefined;
    const why = typeof err === "string" ? err : err?.message;
    const t = new Date(Number(e.time)).toISOString().slice(11, 23);
    lines.push(
      `${t} ${e.level} ${e.component ?? ""}${e.task ? ` task=${e.task}` : ""} ${e.msg}${why ? ` (${why.slice(0, 200)})` : ""}`,
    );
  }
  return lines.slice(-(opts.max ?? 80)).join("\n");
}

/** comment id → the task ids it fed (each should have exactly one). */
export async function tasksOfComments(pool: Pool): Promise<Map<number, number[]>> {
  const { rows } = await pool.query(
    "SELECT comment_id, task_id FROM task_comments WHERE comment_id IS NOT NULL ORDER BY task_id",
  );
  const out = new Map<number, number[]>();
  for (const r of rows as Array<{ comment_id: number; task_id: number }>) {
    out.set(r.comment_id, [...(out.get(r.comment_id) ?? []), r.task_id]);
  }
  return out;
}

/** task id → how many comments on GitHub carry its marker (Tether writes one per task). */
export function markerCounts(stack: Stack, issues: Iterable<number>): Map<number, number> {
  const out = new Map<number, number>();
  for (const n of issues) {
    for (const c of stack.gh.comments(REPO, n)) {
      const m = /<!-- tether:task:(\d+) -->/.exec(String(c.body));
      if (m) out.set(Number(m[1]), (out.get(Number(m[1])) ?? 0) + 1);
    }
  }
  return out;
}

export interface StandinRun {
  /** As the stand-in saw it: inside the sandbox, a pid of its own namespace. */
  pid: number;
  mode: string;
  at: number;
  cwd: string;
  resume: string | null;
  sessionId: string;
  requests: string[];
}

export function readStandinLog(file: string): StandinRun[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as StandinRun);
}

/** Resident memory of a process in MiB (VmRSS), or undefined once it is gone. */
export function rssMiB(pid: number): number | undefined {
  try {
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}
