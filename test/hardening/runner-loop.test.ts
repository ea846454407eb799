/**
 * The runner's loop on real Postgres with narrow fakes for the agent, GitHub and the workspace:
 * the failure modes the Postgres-restart drill found, pinned down quickly.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createPool } from "../../src/db/pool.js";
import { createLogger } from "../../src/log.js";
import { Runner, type RunnerOptions } from "../../src/runner/loop/runner.js";
import { CHANNELS, listen } from "../../src/sql/notify.js";
import { postgresTurnStore } from "../../src/sql/turn-store.js";
import { createTestDatabase } from "../helpers/db.js";
import { readTask, seedTask } from "../helpers/seed.js";
import { waitFor } from "./helpers/drill.js";
import { GatedAgent, fakeThread, fakeWorkspace } from "../helpers/runner-fakes.js";

const db = await createTestDatabase();
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-runner-loop-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.stop(2000);
  await db.pool.query("DELETE FROM tasks");
});

function runner(over: Partial<RunnerOptions>): Runner {
  const r = new Runner({
    pool: db.pool,
    store: postgresTurnStore,
    log: createLogger("silent"),
    runtimeId: "rt-loop",
    concurrency: 1,
    runtime: { homeDir: root, cliPath: "/nowhere/claude", cliVersion: null, canResume: true },
    agent: new GatedAgent(),
    workspace: fakeWorkspace(root),
    github: async () => fakeThread(),
    // Only wake-ups claim in these tests: the poll floor is out of the picture.
    pollMs: 600_000,
    ...over,
  });
  runners.push(r);
  return r;
}

describe("the runner's loop", { timeout: 30_000 }, () => {
  it("claims again after a wake-up that came while every slot was busy", async () => {
    const agent = new GatedAgent();
    const r = runner({ agent, concurrency: 1 });
    const first = await seedTask(db.pool, { issue_number: 101 });
    await r.start();
    await waitFor("the first task to run", () => agent.started.length === 1, 10_000);

    // A second task arrives while the only slot is taken: its NOTIFY wakes the runner, which
    // has nothing free. Then the first finishes, which must free the slot and claim the second.
    const second = await seedTask(db.pool, { issue_number: 102 });
    await db.pool.query("SELECT pg_notify('tether_tasks', $1)", [String(second.id)]);
    await r.tick();
    agent.release(agent.started[0]!);
    await waitFor(
      "the first task to finish",
      async () => (await readTask(db.pool, first.id)).status === "succeeded",
      10_000,
    );
    await waitFor("the second task to be claimed", () => agent.started.length === 2, 10_000);
    agent.release(agent.started[1]!);
    await waitFor(
      "the second task to finish",
      async () => (await readTask(db.pool, second.id)).status === "succeeded",
      10_000,
    );
  });

  it("stops heartbeating a task whose run crashed, so the sweeper hands it on", async () => {
    // The run step throws outside everything runTask catches (here: the workspace cannot even
    // name the directory); a database write failing for good does the same.
    const r = runner({
      concurrency: 1,
      heartbeatMs: 100,
      leaseMs: 1200,
      workspace: fakeWorkspace(root, {
        pathFor: () => {
          throw new Error("workspace root is gone");
        },
      }),
    });
    const t = await seedTask(db.pool, { issue_number: 201 });
    await r.start();
    // Each crash leaves the task to the sweeper, which requeues it until it is out of attempts.
    const done = await waitFor(
      "the crashed task to be swept to the end",
      async () => {
        const row = await readTask(db.pool, t.id);
        return row.status === "failed" ? row : undefined;
      },
      20_000,
    );
    expect(done).toMatchObject({ status: "failed", attempts: 3, locked_by: null });
    expect(String(done.failure_reason)).toContain("stopped responding");
  });

  it("backs off its LISTEN reconnects while the database cannot be reached", async () => {
    // The runner listens through notify.listen on a connection from its pool; here that pool's
    // server is unreachable while nothing else is.
    const lines: string[] = [];
    const dead = createPool("postgres://tether:tether@127.0.0.1:1/nowhere", { max: 2 });
    const listener = listen(dead, [CHANNELS.tasks], () => {}, {
      log: createLogger("warn", { write: (l: string) => void lines.push(l) }),
    });
    await new Promise((resolve) => setTimeout(resolve, 3200));
    await listener.close();
    await dead.end();
    const failures = lines
      .map((l) => JSON.parse(l) as { msg: string; retryInMs?: number })
      .filter((l) => l.msg === "LISTEN failed; retrying");
    // Tries at 0, 0.25, 0.75, 1.75 s (then 3.75 s): doubling, not a fixed short interval.
    expect(failures.length).toBeGreaterThanOrEqual(3);
    expect(failures.length).toBeLessThanOrEqual(4);
    expect(failures.map((f) => f.retryInMs)).toEqual(
      [250, 500, 1000, 2000].slice(0, failures.length),
    );
  });
});
