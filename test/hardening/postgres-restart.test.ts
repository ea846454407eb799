/**
 * Drill: PostgreSQL restarted under load. The built app (webhooks, intake and a runner in one
 * process) runs against a server of this test's own; comments keep arriving on several issues
 * while turns run (the stand-in CLI takes a while per turn), the server is stopped (every
 * connection cut), comments arrive during the outage, and the server comes back on the same
 * port and data. Afterwards: the web side and the runner are working again, their LISTENs are
 * back, and every comment became exactly one task that ran exactly once and was answered once.
 */
import os from "node:os";
import path from "node:path";
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, startStack, type Stack } from "../helpers/e2e-stack.js";
import {
  STANDIN_CLAUDE,
  compactLog,
  deliverComment,
  markerCounts,
  readStandinLog,
  sleep,
  tasksByStatus,
  deliveriesByStatus,
  tasksOfComments,
  waitAllTerminal,
  waitFor,
  allTasks,
  type Delivered,
} from "./helpers/drill.js";
import { startOwnPostgres, type OwnPostgres } from "./helpers/own-postgres.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
`;

let pg: OwnPostgres;
let stack: Stack;
const runLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "tether-pg-drill-")), "runs.jsonl");

beforeAll(async () => {
  pg = await startOwnPostgres();
  stack = await startStack({
    pool: pg.pool,
    databaseUrl: pg.url,
    config: CONFIG,
    env: {
      TETHER_CLAUDE_PATH: STANDIN_CLAUDE,
      CLAUDE_CODE_STANDIN_DELAY_MS: "400-1200",
      CLAUDE_CODE_STANDIN_LOG: runLog,
      // The stand-in CLI runs in the sandbox; its log directory is the one host path it may write.
      TETHER_SANDBOX_BIND: `${path.dirname(runLog)}:rw`,
      TETHER_RUNNER_CONCURRENCY: "3",
    },
  });
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await pg?.close();
  fs.rmSync(path.dirname(runLog), { recursive: true, force: true });
});

async function health(): Promise<number> {
  const child = stack.app.child;
  if (child.exitCode !== null || child.signalCode !== null) {
    throw new Error(
      `the app died (${child.exitCode ?? child.signalCode}):\n${compactLog(stack.app.output(), { minLevel: "info", max: 60 })}`,
    );
  }
  return fetch(`${stack.app.url}/healthz`, { signal: AbortSignal.timeout(5000) }).then(
    (r) => r.status,
    () => 0,
  );
}

/**
 * The app's LISTEN connections now, as "application: last statement". The runner listens on
 * a connection of its own (tasks, then cancel); intake on one taken from its pool. A server
 * restart ends every connection, so seeing them afterwards means they were made again.
 */
const LISTENERS = ["tether-runner-listen: LISTEN tether_cancel", "tether: LISTEN tether_intake"];
async function listeners(): Promise<string[]> {
  const { rows } = await pg.pool.query(
    `SELECT application_name, query FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'`,
  );
  return rows.map((r) => `${r.application_name}: ${String(r.query).replace(/"/g, "")}`).sort();
}

describe("PostgreSQL restarted under load", { timeout: 150_000 }, () => {
  it("reconnects both sides, re-subscribes LISTEN, loses no task and runs none twice", async () => {
    const issues = Array.from(
      { length: 6 },
      (_, i) =>
        stack.gh.addIssue({ repo: REPO, title: `Issue ${i}`, body: `Body ${i}`, user: "alice" })
          .number as number,
    );
    expect(await listeners()).toEqual(LISTENERS);

    const sent: Array<Promise<Delivered>> = [];
    let n = 0;
    const send = (count: number) => {
      for (let i = 0; i < count; i++) {
        const issue = issues[n % issues.length]!;
        sent.push(deliverComment(stack, issue, `@tether request ${++n} on #${issue}`));
      }
    };

    // Before: a round of comments, and wait until turns are running.
    send(6);
    await waitFor("a running task", async () => {
      const s = await tasksByStatus(pg.pool);
      return (s.running ?? 0) > 0;
    });
    send(3);

    // The outage: every connection is cut; deliveries and health fail meanwhile.
    await pg.stop();
    send(4);
    await waitFor(
      "health to report the database down",
      async () => (await health()) === 503,
      10_000,
    );
    await sleep(2500);
    await pg.start();

    await waitFor("health to recover", async () => (await health()) === 200, 30_000);
    send(6);
    const delivered = await Promise.all(sent);
    expect(delivered.some((d) => d.attempts > 1)).toBe(true); // the outage was felt

    await waitAllTerminal(pg.pool, 90_000, stack);

    // LISTEN is back on both sides (the runner's own connection, intake's pooled one).
    await waitFor(
      "LISTEN re-subscribed",
      async () => {
        const l = await listeners();
        return LISTENERS.every((q) => l.includes(q));
      },
      20_000,
    );
    // One of each: a reconnect that raced another would leave a second connection listening.
    await sleep(1000);
    expect(await listeners()).toEqual(LISTENERS);

    const tasks = await allTasks(pg.pool);
    const byComment = await tasksOfComments(pg.pool);
    const runs = readStandinLog(runLog);
    const markers = markerCounts(stack, issues);
    const summary = {
      comments: delivered.length,
      redelivered: delivered.filter((d) => d.attempts > 1).length,
      tasks: tasks.length,
      byStatus: await tasksByStatus(pg.pool),
      deliveries: await deliveriesByStatus(pg.pool),
      runs: runs.length,
      attempts: tasks.map((t) => t.attempts),
    };
    console.log("postgres restart drill:", JSON.stringify(summary));

    // No delivery given up on; no comment lost, none taken twice.
    expect(summary.deliveries.failed ?? 0).toBe(0);
    for (const d of delivered)
      expect(byComment.get(d.commentId), `comment ${d.commentId}`).toHaveLength(1);
    // Every task was claimed once (a turn cut off by the outage waited for the server rather
    // than being swept and run again), finished well, and was answered exactly once.
    for (const t of tasks) {
      expect(t.attempts, `claims of task ${t.id}`).toBe(1);
      expect(t, `task ${t.id}`).toMatchObject({ status: "succeeded", outcome: "success" });
      expect(markers.get(t.id), `answers of task ${t.id}`).toBe(1);
    }
    // Each comment's request went to the CLI exactly once: no turn ran twice.
    for (const d of delivered) {
      const ranIn = runs.filter((r) => r.requests.includes(d.url));
      expect(ranIn, `runs answering ${d.url}`).toHaveLength(1);
    }
  });
});
